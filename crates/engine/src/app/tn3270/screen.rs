//! A 3270 presentation space: what a terminal's screen holds after the
//! outbound records it was sent, so that a scripted terminal can wait for
//! text at a position, find the field at the cursor and type into it. It
//! applies the write commands — Write, Erase/Write, Erase/Write Alternate,
//! Erase All Unprotected — with their WCC (keyboard restore, reset MDT),
//! and the orders SF, SFE, SBA, SA, IC, PT, RA, EUA, MF and GE, as the
//! 3270 Data Stream Programmer's Reference defines them and x3270's
//! `ctlr.c` applies them. A scripted terminal (`tn3270_script`) also types
//! into it ([`Screen::type_at`], setting the field's modified data tag),
//! finds text and labels ([`Screen::find`], [`Screen::field_after`]) and
//! reads it back as the inbound record an AID key sends
//! ([`Screen::read_modified`]); without a script the codec sends sized
//! Enter records and keeps no screen.
//!
//! Layout and bounds. The screen is `rows × cols` cells of the terminal's
//! model (24×80 for model 2, the default size; Erase/Write Alternate
//! switches to the model's alternate size). Each cell is one EBCDIC byte
//! (`chars`); field attributes are not a second full-size array but a list
//! of (address, attribute) sorted by address, since a screen has tens of
//! fields, not thousands: a model-2 screen is 1,920 bytes of characters
//! plus 4 bytes per field, well under the 4 KiB a scripted session may
//! spend on it. Character attributes set by SA/SFE (colour, highlighting)
//! are kept the same way, only for cells that have one. A record is
//! applied in one pass, O(record + cells erased).
//!
//! Faults. A command or order the model does not know, an address off the
//! screen or a record that ends inside an order is an error naming the byte
//! and where it came, never a panic; the screen keeps what was applied
//! before it.

/// 3270 write commands, remote (SNA) and local codes.
const CMD_W: [u8; 2] = [0xF1, 0x01];
const CMD_EW: [u8; 2] = [0xF5, 0x05];
const CMD_EWA: [u8; 2] = [0x7E, 0x0D];
const CMD_EAU: [u8; 2] = [0x6F, 0x0F];
const CMD_WSF: [u8; 2] = [0xF3, 0x11];

/// Orders.
const ORDER_PT: u8 = 0x05;
const ORDER_GE: u8 = 0x08;
const ORDER_SBA: u8 = 0x11;
const ORDER_EUA: u8 = 0x12;
const ORDER_IC: u8 = 0x13;
const ORDER_SF: u8 = 0x1D;
const ORDER_SA: u8 = 0x28;
const ORDER_SFE: u8 = 0x29;
const ORDER_MF: u8 = 0x2C;
const ORDER_RA: u8 = 0x3C;

/// WCC bits.
const WCC_RESET_MDT: u8 = 0x01;
const WCC_KEYBOARD_RESTORE: u8 = 0x02;

/// Field attribute bits.
pub const FA_PROTECTED: u8 = 0x20;
pub const FA_NUMERIC: u8 = 0x10;
pub const FA_NONDISPLAY: u8 = 0x0C;
pub const FA_MDT: u8 = 0x01;

/// SFE/MF attribute type of the basic field attribute.
const XA_3270: u8 = 0xC0;

/// The 6-bit codes of 12-bit addresses, in their EBCDIC graphic form.
const CODE_TABLE: [u8; 64] = [
    0x40, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F,
    0x50, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0x5A, 0x5B, 0x5C, 0x5D, 0x5E, 0x5F,
    0x60, 0x61, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0x6A, 0x6B, 0x6C, 0x6D, 0x6E, 0x6F,
    0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8, 0xF9, 0x7A, 0x7B, 0x7C, 0x7D, 0x7E, 0x7F,
];

/// A record the model could not apply, in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenError(pub String);

impl std::fmt::Display for ScreenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A buffer address of a record's order: 12-bit (two 6-bit codes) or
/// 14-bit (first two bits 00).
pub fn decode_address(b1: u8, b2: u8) -> u16 {
    if b1 & 0xC0 == 0 {
        u16::from(b1 & 0x3F) << 8 | u16::from(b2)
    } else {
        u16::from(b1 & 0x3F) << 6 | u16::from(b2 & 0x3F)
    }
}

/// `address` as a 12-bit address's two bytes (screens up to 4,096 cells).
pub fn encode_address(address: u16) -> [u8; 2] {
    [
        CODE_TABLE[usize::from(address >> 6 & 0x3F)],
        CODE_TABLE[usize::from(address & 0x3F)],
    ]
}

/// One EBCDIC (code page 037) byte as ASCII text: letters, digits,
/// space and the common punctuation; anything else (nulls included) shows
/// as a space, as a terminal shows a null.
pub fn ebcdic_to_ascii(b: u8) -> char {
    let t: &[(u8, &str)] = &[
        (0x4B, ".<(+|"),
        (0x50, "&"),
        (0x5A, "!$*);"),
        (0x60, "-/"),
        (0x6B, ",%_>?"),
        (0x7A, ":#@'=\""),
        (0x81, "abcdefghi"),
        (0x91, "jklmnopqr"),
        (0xA2, "stuvwxyz"),
        (0xC1, "ABCDEFGHI"),
        (0xD1, "JKLMNOPQR"),
        (0xE2, "STUVWXYZ"),
        (0xF0, "0123456789"),
    ];
    for (start, chars) in t {
        if b >= *start && usize::from(b - start) < chars.len() {
            return chars.as_bytes()[usize::from(b - start)] as char;
        }
    }
    ' '
}

/// The AID of the CLEAR key.
const AID_CLEAR: u8 = 0x6D;

/// One ASCII character as EBCDIC (code page 037), the inverse of
/// [`ebcdic_to_ascii`]; a character it does not have becomes a space.
pub fn ascii_to_ebcdic(c: char) -> u8 {
    static TABLE: std::sync::OnceLock<[u8; 128]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0x40u8; 128];
        for b in (0x41..=0xFEu8).rev() {
            let a = ebcdic_to_ascii(b);
            if a != ' ' {
                t[a as usize] = b;
            }
        }
        t
    });
    table.get(c as usize).copied().unwrap_or(0x40)
}

/// A field: where its attribute byte is, and the attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Address of the attribute byte (the field's data starts after it).
    pub start: u16,
    pub attr: u8,
}

impl Field {
    pub fn protected(&self) -> bool {
        self.attr & FA_PROTECTED != 0
    }

    pub fn modified(&self) -> bool {
        self.attr & FA_MDT != 0
    }
}

/// A terminal's presentation space.
#[derive(Debug, Clone)]
pub struct Screen {
    /// The model's default and alternate sizes, (rows, columns).
    default: (u16, u16),
    alternate: (u16, u16),
    rows: u16,
    cols: u16,
    /// One EBCDIC byte per cell; an attribute cell holds 0.
    chars: Vec<u8>,
    /// Field attributes by address, sorted.
    fields: Vec<Field>,
    /// Character attributes (SA, SFE other than the field's), by address,
    /// sorted: (address, type, value), only where set.
    char_attrs: Vec<(u16, u8, u8)>,
    cursor: u16,
    keyboard_locked: bool,
    /// Typed into an unformatted screen (no fields to carry the tag).
    unformatted_modified: bool,
}

impl Screen {
    /// A cleared screen of `default` size whose alternate size is
    /// `alternate` (a model 2: both 24×80; model 5: 24×80 and 27×132).
    pub fn new(default: (u16, u16), alternate: (u16, u16)) -> Screen {
        let (rows, cols) = default;
        Screen {
            default,
            alternate,
            rows,
            cols,
            chars: vec![0; usize::from(rows) * usize::from(cols)],
            fields: Vec::new(),
            char_attrs: Vec::new(),
            cursor: 0,
            // A terminal is locked until a write restores its keyboard.
            keyboard_locked: true,
            unformatted_modified: false,
        }
    }

    /// The screen of a 3278 of `model` (2 to 5): 24×80 by default, the
    /// model's size as the alternate.
    pub fn of_model(model: u8) -> Screen {
        let options = stackbench_model::settings::Tn3270Options {
            model,
            ..Default::default()
        };
        Screen::new((24, 80), options.screen())
    }

    pub fn size(&self) -> (u16, u16) {
        (self.rows, self.cols)
    }

    fn cells(&self) -> u16 {
        self.rows * self.cols
    }

    /// The cursor, (row, column) from 0.
    pub fn cursor(&self) -> (u16, u16) {
        (self.cursor / self.cols, self.cursor % self.cols)
    }

    pub fn keyboard_locked(&self) -> bool {
        self.keyboard_locked
    }

    /// The fields, by address.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The field that holds `address` (the last attribute at or before it,
    /// wrapping); `None` on an unformatted screen.
    pub fn field_at(&self, address: u16) -> Option<Field> {
        let at = self.fields.partition_point(|f| f.start <= address);
        if at > 0 {
            Some(self.fields[at - 1])
        } else {
            self.fields.last().copied()
        }
    }

    /// The character attribute of `kind` (0x41 highlighting, 0x42 colour…)
    /// set on the cell at `address`.
    pub fn char_attr(&self, address: u16, kind: u8) -> Option<u8> {
        self.char_attrs
            .iter()
            .find(|(a, t, _)| *a == address && *t == kind)
            .map(|(_, _, v)| *v)
    }

    /// Bytes the model keeps (what a scripted session's screen costs).
    pub fn heap_bytes(&self) -> usize {
        self.chars.capacity()
            + self.fields.capacity() * std::mem::size_of::<Field>()
            + self.char_attrs.capacity() * std::mem::size_of::<(u16, u8, u8)>()
    }

    /// Row `row` as text (attribute cells and nondisplay fields as spaces).
    pub fn row_text(&self, row: u16) -> String {
        let start = row * self.cols;
        (start..start + self.cols).map(|a| self.shown(a)).collect()
    }

    /// The whole screen as text, one line per row.
    pub fn text(&self) -> String {
        (0..self.rows)
            .map(|r| self.row_text(r))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `len` characters from (row, col), wrapping to the next rows.
    pub fn text_at(&self, row: u16, col: u16, len: u16) -> String {
        let start = row * self.cols + col;
        (0..len)
            .map(|i| self.shown((start + i) % self.cells()))
            .collect()
    }

    fn shown(&self, address: u16) -> char {
        if self.is_attribute(address) {
            return ' ';
        }
        match self.field_at(address) {
            Some(f) if f.attr & FA_NONDISPLAY == FA_NONDISPLAY => ' ',
            _ => ebcdic_to_ascii(self.chars[usize::from(address)]),
        }
    }

    fn is_attribute(&self, address: u16) -> bool {
        self.fields
            .binary_search_by_key(&address, |f| f.start)
            .is_ok()
    }

    /// Clears the screen at `size`.
    fn erase(&mut self, (rows, cols): (u16, u16)) {
        self.rows = rows;
        self.cols = cols;
        self.chars.clear();
        self.chars.resize(usize::from(rows) * usize::from(cols), 0);
        self.fields.clear();
        self.char_attrs.clear();
        self.cursor = 0;
        self.unformatted_modified = false;
    }

    /// Puts the attribute `attr` at `address`.
    fn set_field(&mut self, address: u16, attr: u8) {
        self.chars[usize::from(address)] = 0;
        match self.fields.binary_search_by_key(&address, |f| f.start) {
            Ok(i) => self.fields[i].attr = attr,
            Err(i) => self.fields.insert(
                i,
                Field {
                    start: address,
                    attr,
                },
            ),
        }
    }

    /// Writes a character at `address` (over an attribute, removing it).
    fn put(&mut self, address: u16, b: u8, attr: Option<(u8, u8)>) {
        if let Ok(i) = self.fields.binary_search_by_key(&address, |f| f.start) {
            self.fields.remove(i);
        }
        self.chars[usize::from(address)] = b;
        self.char_attrs.retain(|(a, _, _)| *a != address);
        if let Some((kind, value)) = attr {
            self.char_attrs.push((address, kind, value));
        }
    }

    fn next(&self, address: u16) -> u16 {
        (address + 1) % self.cells()
    }

    /// The first unprotected data cell after the field attributes at or
    /// after `from` (PT, and a cursor placed by Erase All Unprotected);
    /// `None` when every field is protected.
    fn next_unprotected(&self, from: u16) -> Option<u16> {
        let n = self.fields.len();
        let at = self.fields.partition_point(|f| f.start < from);
        (0..n)
            .map(|i| self.fields[(at + i) % n])
            .find(|f| !f.protected() && !self.is_attribute(self.next(f.start)))
            .map(|f| self.next(f.start))
    }

    /// Whether `address` is in an unprotected field (or the screen is
    /// unformatted).
    fn unprotected(&self, address: u16) -> bool {
        !self.is_attribute(address) && self.field_at(address).is_none_or(|f| !f.protected())
    }

    /// The address of (row, col).
    pub fn address(&self, row: u16, col: u16) -> u16 {
        row * self.cols + col
    }

    /// Whether `text` is on the screen at (row, col), or anywhere (`None`;
    /// rows are not joined: text wrapping from one row to the next is not
    /// found).
    pub fn shows(&self, text: &str, at: Option<(u16, u16)>) -> bool {
        match at {
            Some((row, col)) => {
                row < self.rows
                    && col < self.cols
                    && self.text_at(row, col, text.len() as u16) == text
            }
            None => self.find(text).is_some(),
        }
    }

    /// The address just after the first occurrence of `text` (row by row).
    pub fn find(&self, text: &str) -> Option<u16> {
        (0..self.rows).find_map(|r| {
            let row = self.row_text(r);
            let at = row.find(text)?;
            Some(r * self.cols + (at + text.len()) as u16)
        })
    }

    /// The first data cell of the first unprotected field that begins at
    /// or after `address` (the input field after a label).
    pub fn field_after(&self, address: u16) -> Option<u16> {
        self.fields
            .iter()
            .filter(|f| f.start >= address.saturating_sub(1) && !f.protected())
            .map(|f| self.next(f.start))
            .find(|&a| !self.is_attribute(a))
    }

    /// Types `text` (ASCII, sent as EBCDIC code page 037) at `address`, as
    /// a user would: into an unprotected field, setting its modified data
    /// tag, the cursor left after it; an error naming the position when
    /// the cell is protected, or the text runs past the field's end.
    pub fn type_at(&mut self, address: u16, text: &str) -> Result<(), ScreenError> {
        let (row, col) = (address / self.cols + 1, address % self.cols + 1);
        if !self.unprotected(address) {
            return Err(ScreenError(format!(
                "row {row}, column {col} is protected (no input field there): the screen \
                 reads {:?}",
                self.row_text(row - 1).trim_end()
            )));
        }
        let mut a = address;
        for c in text.chars() {
            if !self.unprotected(a) {
                return Err(ScreenError(format!(
                    "\"{text}\" typed at row {row}, column {col} runs past its field's end"
                )));
            }
            self.chars[usize::from(a)] = ascii_to_ebcdic(c);
            a = self.next(a);
        }
        if let Some(f) = self.field_at(address) {
            if let Ok(i) = self.fields.binary_search_by_key(&f.start, |x| x.start) {
                self.fields[i].attr |= FA_MDT;
            }
        } else {
            // An unformatted screen: everything typed is sent.
            self.unformatted_modified = true;
        }
        self.cursor = a;
        Ok(())
    }

    /// The inbound 3270 data an AID key sends (Read Modified): the AID,
    /// the cursor's address, then SBA and the data (nulls dropped) of each
    /// field whose modified data tag is set; a short-read key (CLEAR, PA)
    /// sends the AID alone. The keyboard locks until the host restores it,
    /// and CLEAR erases the screen, as a terminal does.
    pub fn read_modified(&mut self, aid: u8, short: bool, out: &mut Vec<u8>) {
        out.push(aid);
        self.keyboard_locked = true;
        if short {
            if aid == AID_CLEAR {
                self.erase(self.default);
            }
            return;
        }
        out.extend_from_slice(&encode_address(self.cursor));
        if self.fields.is_empty() {
            if self.unformatted_modified {
                out.extend(self.chars.iter().copied().filter(|&b| b != 0));
            }
            return;
        }
        for (i, f) in self.fields.iter().enumerate() {
            if !f.modified() {
                continue;
            }
            let start = self.next(f.start);
            let end = self
                .fields
                .get(i + 1)
                .or(self.fields.first())
                .map_or(start, |n| n.start);
            out.push(ORDER_SBA);
            out.extend_from_slice(&encode_address(start));
            let mut a = start;
            while a != end {
                let b = self.chars[usize::from(a)];
                if b != 0 {
                    out.push(b);
                }
                a = self.next(a);
            }
        }
    }

    /// Applies one outbound record's 3270 data (after any TN3270E header).
    pub fn apply(&mut self, record: &[u8]) -> Result<(), ScreenError> {
        let Some(&command) = record.first() else {
            return Ok(());
        };
        if CMD_EAU.contains(&command) {
            return self.erase_all_unprotected();
        }
        if CMD_WSF.contains(&command) {
            // Structured fields (queries) carry no screen data here.
            return Ok(());
        }
        if CMD_EW.contains(&command) {
            self.erase(self.default);
        } else if CMD_EWA.contains(&command) {
            self.erase(self.alternate);
        } else if !CMD_W.contains(&command) {
            return Err(ScreenError(format!(
                "a record with command 0x{command:02X}, which the screen model does not know \
                 (it applies Write, Erase/Write, Erase/Write Alternate and Erase All \
                 Unprotected)"
            )));
        }
        let Some(&wcc) = record.get(1) else {
            return Ok(());
        };
        if wcc & WCC_RESET_MDT != 0 {
            for f in &mut self.fields {
                f.attr &= !FA_MDT;
            }
        }
        self.orders(&record[2..])?;
        if wcc & WCC_KEYBOARD_RESTORE != 0 {
            self.keyboard_locked = false;
        }
        Ok(())
    }

    /// Erase All Unprotected: nulls in every unprotected field, MDTs reset,
    /// the keyboard restored, the cursor at the first unprotected field.
    fn erase_all_unprotected(&mut self) -> Result<(), ScreenError> {
        for a in 0..self.cells() {
            if self.unprotected(a) {
                self.chars[usize::from(a)] = 0;
            }
        }
        for f in &mut self.fields {
            f.attr &= !FA_MDT;
        }
        self.cursor = self.next_unprotected(0).unwrap_or(0);
        self.keyboard_locked = false;
        Ok(())
    }

    /// The orders and data of a write, from the cursor's address (as
    /// x3270's `ctlr_write`: an erase has put it at 0).
    fn orders(&mut self, data: &[u8]) -> Result<(), ScreenError> {
        let mut address = self.cursor.min(self.cells() - 1);
        let mut attr: Option<(u8, u8)> = None;
        let mut i = 0;
        let need = |i: usize, n: usize, order: &str| -> Result<(), ScreenError> {
            if i + n > data.len() {
                return Err(ScreenError(format!(
                    "a record that ends inside its {order} order (at byte {})",
                    i + 2
                )));
            }
            Ok(())
        };
        while i < data.len() {
            let b = data[i];
            match b {
                ORDER_SBA | ORDER_EUA | ORDER_RA => {
                    let name = match b {
                        ORDER_SBA => "SBA",
                        ORDER_EUA => "EUA",
                        _ => "RA",
                    };
                    need(i + 1, 2, name)?;
                    let to = self.checked(decode_address(data[i + 1], data[i + 2]), name)?;
                    i += 3;
                    match b {
                        ORDER_SBA => address = to,
                        ORDER_EUA => {
                            let mut a = address;
                            loop {
                                if self.unprotected(a) {
                                    self.chars[usize::from(a)] = 0;
                                }
                                a = self.next(a);
                                if a == to {
                                    break;
                                }
                            }
                            address = to;
                        }
                        _ => {
                            need(i, 1, "RA")?;
                            let mut ch = data[i];
                            i += 1;
                            if ch == ORDER_GE {
                                need(i, 1, "RA")?;
                                ch = data[i];
                                i += 1;
                            }
                            loop {
                                self.put(address, ch, attr);
                                address = self.next(address);
                                if address == to {
                                    break;
                                }
                            }
                        }
                    }
                }
                ORDER_SF => {
                    need(i + 1, 1, "SF")?;
                    self.set_field(address, data[i + 1]);
                    address = self.next(address);
                    i += 2;
                }
                ORDER_SFE | ORDER_MF => {
                    let name = if b == ORDER_SFE { "SFE" } else { "MF" };
                    need(i + 1, 1, name)?;
                    let pairs = usize::from(data[i + 1]);
                    need(i + 2, 2 * pairs, name)?;
                    let mut field = 0;
                    for p in 0..pairs {
                        let (kind, value) = (data[i + 2 + 2 * p], data[i + 3 + 2 * p]);
                        if kind == XA_3270 {
                            field = value;
                        } else {
                            self.char_attrs
                                .retain(|(a, t, _)| *a != address || *t != kind);
                            self.char_attrs.push((address, kind, value));
                        }
                    }
                    if b == ORDER_SFE || self.is_attribute(address) {
                        self.set_field(address, field);
                    }
                    if b == ORDER_SFE {
                        address = self.next(address);
                    }
                    i += 2 + 2 * pairs;
                }
                ORDER_SA => {
                    need(i + 1, 2, "SA")?;
                    let (kind, value) = (data[i + 1], data[i + 2]);
                    // Type 0 resets every character attribute.
                    attr = (kind != 0 && value != 0).then_some((kind, value));
                    i += 3;
                }
                ORDER_IC => {
                    self.cursor = address;
                    i += 1;
                }
                ORDER_PT => {
                    address = self.next_unprotected(address).unwrap_or(0);
                    i += 1;
                }
                ORDER_GE => {
                    need(i + 1, 1, "GE")?;
                    self.put(address, data[i + 1], attr);
                    address = self.next(address);
                    i += 2;
                }
                b if b < 0x40
                    && !matches!(b, 0x00 | 0x0C | 0x0D | 0x15 | 0x19 | 0x1C | 0x1E | 0x3F) =>
                {
                    return Err(ScreenError(format!(
                        "an order 0x{b:02X} (at byte {}) the screen model does not know",
                        i + 2
                    )));
                }
                b => {
                    self.put(address, b, attr);
                    address = self.next(address);
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// `address` if it is on the screen.
    fn checked(&self, address: u16, order: &str) -> Result<u16, ScreenError> {
        if address >= self.cells() {
            return Err(ScreenError(format!(
                "an {order} order to address {address}, off the {}x{} screen",
                self.rows, self.cols
            )));
        }
        Ok(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// EBCDIC of ASCII upper-case text, digits and spaces.
    fn ebc(text: &str) -> Vec<u8> {
        text.bytes()
            .map(|c| {
                (0..=255u8)
                    .find(|&b| ebcdic_to_ascii(b) == c as char && (c != b' ' || b == 0x40))
                    .unwrap()
            })
            .collect()
    }

    fn sba(row: u16, col: u16) -> Vec<u8> {
        let [a, b] = encode_address(row * 80 + col);
        vec![ORDER_SBA, a, b]
    }

    #[test]
    fn addresses_decode_in_both_forms() {
        for a in [0, 1, 79, 80, 1919, 3563] {
            let [b1, b2] = encode_address(a);
            assert_eq!(decode_address(b1, b2), a);
        }
        assert_eq!(decode_address(0x07, 0x80), 0x0780, "14-bit");
        assert_eq!(encode_address(81), [0xC1, 0xD1]);
        // The request record's cursor: row 1, column 10 (from 0).
        assert_eq!(decode_address(0xC1, 0x5A), 90);
    }

    #[test]
    fn erase_write_builds_fields_text_and_cursor_and_restores_the_keyboard() {
        let mut s = Screen::of_model(2);
        assert!(s.keyboard_locked());
        let mut r = vec![0xF5, 0xC3];
        r.extend(sba(0, 0));
        r.extend([ORDER_SF, 0x60]);
        r.extend(ebc("LOGON"));
        r.extend(sba(1, 0));
        r.extend([ORDER_SF, 0x40]);
        r.push(ORDER_IC);
        r.extend(ebc("USER"));
        r.extend(sba(1, 10));
        r.extend([ORDER_SF, 0x60]);
        s.apply(&r).unwrap();
        assert!(!s.keyboard_locked());
        assert_eq!(s.row_text(0).trim_end(), " LOGON");
        assert_eq!(s.text_at(1, 1, 4), "USER");
        assert_eq!(s.cursor(), (1, 1));
        assert_eq!(s.fields().len(), 3);
        let f = s.field_at(85).unwrap();
        assert_eq!((f.start, f.protected()), (80, false));
        assert!(s.field_at(3).unwrap().protected());
        assert_eq!(s.text().lines().count(), 24);
        // Within what a scripted session may spend.
        assert!(s.heap_bytes() <= 4096, "{}", s.heap_bytes());
    }

    #[test]
    fn write_keeps_the_screen_and_erase_write_alternate_resizes() {
        let mut s = Screen::of_model(5);
        let mut r = vec![0xF5, 0x02];
        r.extend(ebc("AB"));
        s.apply(&r).unwrap();
        let mut w = vec![0xF1, 0x00];
        w.extend(sba(0, 1));
        w.extend(ebc("Z"));
        s.apply(&w).unwrap();
        assert_eq!(s.text_at(0, 0, 2), "AZ");
        s.apply(&[0x7E, 0x02]).unwrap();
        assert_eq!(s.size(), (27, 132));
        assert_eq!(s.text_at(0, 0, 2), "  ");
        s.apply(&[0xF5, 0x02]).unwrap();
        assert_eq!(s.size(), (24, 80));
    }

    #[test]
    fn ra_eua_sa_sfe_and_eau() {
        let mut s = Screen::of_model(2);
        let mut r = vec![0xF5, 0x02];
        // Protected label, then an unprotected field of dashes to (0,20).
        r.extend([ORDER_SF, 0x60]);
        r.extend(ebc("ID"));
        // SFE: an unprotected field with reverse video (0x41 = 0xF2).
        r.extend([ORDER_SFE, 2, XA_3270, 0x40, 0x41, 0xF2]);
        let [a, b] = encode_address(20);
        r.extend([ORDER_RA, a, b, 0x60]);
        r.extend([ORDER_SF, 0x60]);
        // SA colour red for the next characters.
        r.extend([ORDER_SA, 0x42, 0xF2]);
        r.extend(ebc("X"));
        s.apply(&r).unwrap();
        assert_eq!(s.text_at(0, 4, 16), "----------------");
        assert_eq!(s.char_attr(3, 0x41), Some(0xF2));
        assert_eq!(s.char_attr(21, 0x42), Some(0xF2));
        // EUA from (0,4) to (0,10): the unprotected dashes go.
        let mut w = vec![0xF1, 0x00];
        w.extend(sba(0, 4));
        let [a, b] = encode_address(10);
        w.extend([ORDER_EUA, a, b]);
        s.apply(&w).unwrap();
        assert_eq!(s.text_at(0, 4, 8), "      --");
        assert_eq!(s.text_at(0, 1, 2), "ID", "protected text stays");
        // EAU: every unprotected cell, the cursor to the first input field.
        s.apply(&[0x6F]).unwrap();
        assert_eq!(s.text_at(0, 10, 2), "  ");
        assert_eq!(s.cursor(), (0, 4));
    }

    #[test]
    fn pt_moves_to_the_next_unprotected_field_and_nondisplay_hides() {
        let mut s = Screen::of_model(2);
        let mut r = vec![0xF5, 0x02];
        r.extend([ORDER_SF, 0x60]);
        r.extend(ebc("PW"));
        r.extend([ORDER_SF, 0x4C]);
        r.extend(ebc("SECRET"));
        r.extend([ORDER_SF, 0x60]);
        r.extend(sba(0, 0));
        r.push(ORDER_PT);
        r.push(ORDER_IC);
        s.apply(&r).unwrap();
        assert_eq!(s.cursor(), (0, 4));
        assert_eq!(s.text_at(0, 4, 6), "      ", "nondisplay");
    }

    #[test]
    fn what_the_model_does_not_know_is_an_error_not_a_panic() {
        let mut s = Screen::of_model(2);
        let e = s.apply(&[0x42, 0x00]).unwrap_err();
        assert!(e.0.contains("command 0x42"), "{e}");
        let e = s.apply(&[0xF5, 0x02, 0x11, 0x7F]).unwrap_err();
        assert!(e.0.contains("ends inside its SBA"), "{e}");
        let e = s.apply(&[0xF5, 0x02, 0x11, 0x3F, 0xFF]).unwrap_err();
        assert!(e.0.contains("off the 24x80 screen"), "{e}");
        let e = s.apply(&[0xF5, 0x02, 0x2A]).unwrap_err();
        assert!(e.0.contains("order 0x2A"), "{e}");
        // Pseudo-random records: each returns.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            let bytes: Vec<u8> = (0..48)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let mut rec = vec![0xF5, 0xC3];
            rec.extend(&bytes);
            let _ = s.apply(&rec);
            let _ = s.apply(&bytes);
            let _ = s.text();
        }
    }
}
