//! The responder's demo application (`responder_tn3270_app demo`): three
//! formatted 3270 screens a script can drive with nothing installed, as a
//! CICS or IMS transaction behind a TN3270 server would serve them —
//! Erase/Write records with protected labels, unprotected input fields
//! and the cursor placed in the first:
//!
//! - LOGON: `STACKBENCH LOGON` at row 1, column 30; `USERID   ===>` with
//!   an 8-character field at row 5, `PASSWORD ===>` with a nondisplay
//!   field at row 6. ENTER with a user ID shows the menu; without one the
//!   logon again with `USERID REQUIRED` at row 22.
//! - MENU: `STACKBENCH MAIN MENU`, `USER <id>` at row 3, `1  ACCOUNT
//!   INQUIRY`, `OPTION ===>` with a 2-character field at row 8. ENTER with
//!   option 1 shows the account screen; another option the menu with
//!   `INVALID OPTION`; PF3 logs off (the logon screen, `LOGGED OFF`).
//! - ACCOUNT: `ACCOUNT INQUIRY` and 18 rows of account data for the user
//!   (`ACCOUNT 000001 …`), `PF3=RETURN` at row 24. PF3 returns to the menu;
//!   ENTER shows the screen again.
//!
//! CLEAR shows the current screen again (as CICS does after a clear);
//! other keys show it with `PRESS ENTER OR PF3` at row 22. Each answer is
//! one record, built from the inbound record's AID and fields (Read
//! Modified: AID, cursor, then SBA and data per modified field).

use super::screen::{ascii_to_ebcdic, decode_address, encode_address};

/// Erase/Write, and its WCC: reset, keyboard restore, reset MDTs.
const ERASE_WRITE: u8 = 0xF5;
const WCC: u8 = 0xC3;
const SBA: u8 = 0x11;
const SF: u8 = 0x1D;
const IC: u8 = 0x13;
/// Field attributes in their 6-bit graphic code: protected, protected
/// intensified, unprotected, unprotected nondisplay, autoskip.
const PROTECTED: u8 = 0x60;
const BRIGHT: u8 = 0xE8;
const INPUT: u8 = 0x40;
const HIDDEN: u8 = 0x4C;
const SKIP: u8 = 0xF0;
const COLS: u16 = 80;

const AID_ENTER: u8 = 0x7D;
const AID_CLEAR: u8 = 0x6D;
const AID_PF3: u8 = 0xF3;

/// The screens the application shows.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Panel {
    #[default]
    Logon,
    Menu,
    Account,
}

/// Where the input fields' data begins (row, column from 0): after the
/// attribute byte.
const USERID: (u16, u16) = (4, 16);
const PASSWORD: (u16, u16) = (5, 16);
const OPTION: (u16, u16) = (7, 14);

fn at((row, col): (u16, u16)) -> u16 {
    row * COLS + col
}

/// A screen's record, written order by order.
struct Out(Vec<u8>);

impl Out {
    fn new() -> Out {
        Out(vec![ERASE_WRITE, WCC])
    }
    fn sba(&mut self, row: u16, col: u16) -> &mut Out {
        self.0.push(SBA);
        self.0.extend_from_slice(&encode_address(at((row, col))));
        self
    }
    fn sf(&mut self, attr: u8) -> &mut Out {
        self.0.extend_from_slice(&[SF, attr]);
        self
    }
    fn text(&mut self, t: &str) -> &mut Out {
        self.0.extend(t.chars().map(ascii_to_ebcdic));
        self
    }
    /// A protected label at (row, col).
    fn label(&mut self, row: u16, col: u16, attr: u8, t: &str) -> &mut Out {
        self.sba(row, col - 1).sf(attr).text(t)
    }
    /// An input field whose data begins at `data`, `len` long, then an
    /// autoskip field to end it.
    fn input(&mut self, data: (u16, u16), len: u16, attr: u8) -> &mut Out {
        self.sba(data.0, data.1 - 1).sf(attr);
        self.sba(data.0, data.1 + len).sf(SKIP)
    }
    fn cursor(&mut self, data: (u16, u16)) -> &mut Out {
        self.sba(data.0, data.1);
        self.0.push(IC);
        self
    }
}

/// One session of the application: where it is, who logged on, the
/// inbound record being read.
#[derive(Debug, Default)]
pub struct Demo {
    panel: Panel,
    user: String,
    input: Vec<u8>,
    /// The answer's record on the wire (the server's to fill).
    pub wire: Vec<u8>,
}

/// Longest inbound record kept (a 24×80 screen's fields and their orders).
const INPUT_MAX: usize = 4096;

impl Demo {
    /// The first screen, after the logon's negotiation.
    pub fn first_screen(&mut self) -> Vec<u8> {
        self.panel = Panel::Logon;
        logon("")
    }

    /// One byte of the inbound record's 3270 data (after any header).
    pub fn byte(&mut self, b: u8) {
        if self.input.len() < INPUT_MAX {
            self.input.push(b);
        }
    }

    /// A record that is no input (a RESPONSE) ended: its bytes go.
    pub fn skip(&mut self) {
        self.input.clear();
    }

    /// The inbound record ended: the screen that answers it (3270 data).
    pub fn answer(&mut self) -> Vec<u8> {
        let input = std::mem::take(&mut self.input);
        let aid = input.first().copied().unwrap_or(0);
        let field = |data: (u16, u16)| field_text(&input, at(data));
        let (panel, out) = match (self.panel, aid) {
            (p, AID_CLEAR) => (p, self.show(p, "")),
            (Panel::Logon, AID_ENTER) => {
                let user = field(USERID);
                if user.is_empty() {
                    (Panel::Logon, logon("USERID REQUIRED"))
                } else {
                    self.user = user.chars().take(8).collect();
                    (Panel::Menu, self.show(Panel::Menu, ""))
                }
            }
            (Panel::Menu, AID_ENTER) => match field(OPTION).as_str() {
                "1" => (Panel::Account, self.show(Panel::Account, "")),
                _ => (Panel::Menu, self.show(Panel::Menu, "INVALID OPTION")),
            },
            (Panel::Menu, AID_PF3) => (Panel::Logon, logon("LOGGED OFF")),
            (Panel::Account, AID_PF3) => (Panel::Menu, self.show(Panel::Menu, "")),
            (Panel::Account, AID_ENTER) => (Panel::Account, self.show(Panel::Account, "")),
            (p, _) => (p, self.show(p, "PRESS ENTER OR PF3")),
        };
        self.panel = panel;
        // The buffer is kept for the next record.
        self.input = input;
        self.input.clear();
        out
    }

    fn show(&self, panel: Panel, message: &str) -> Vec<u8> {
        match panel {
            Panel::Logon => logon(message),
            Panel::Menu => menu(&self.user, message),
            Panel::Account => account(&self.user),
        }
    }
}

/// The data of the field that begins at `address` in an inbound record
/// (after its SBA), as ASCII, trimmed; empty when the field was not sent.
fn field_text(input: &[u8], address: u16) -> String {
    // AID and cursor address, then SBA a1 a2 data… per field.
    let mut i = 3;
    while i + 2 < input.len() {
        if input[i] != SBA {
            i += 1;
            continue;
        }
        let a = decode_address(input[i + 1], input[i + 2]);
        let start = i + 3;
        let end = input[start..]
            .iter()
            .position(|&b| b == SBA)
            .map_or(input.len(), |n| start + n);
        if a == address {
            let text: String = input[start..end]
                .iter()
                .map(|&b| super::screen::ebcdic_to_ascii(b))
                .collect();
            return text.trim().to_string();
        }
        i = end;
    }
    String::new()
}

fn logon(message: &str) -> Vec<u8> {
    let mut o = Out::new();
    o.label(0, 29, BRIGHT, "STACKBENCH LOGON")
        .label(2, 1, PROTECTED, "TN3270 DEMO APPLICATION")
        .label(4, 1, PROTECTED, "USERID   ===>")
        .input(USERID, 8, INPUT)
        .label(5, 1, PROTECTED, "PASSWORD ===>")
        .input(PASSWORD, 8, HIDDEN);
    if !message.is_empty() {
        o.label(21, 1, BRIGHT, message);
    }
    o.label(23, 1, PROTECTED, "ENTER=LOGON").cursor(USERID);
    o.0
}

fn menu(user: &str, message: &str) -> Vec<u8> {
    let mut o = Out::new();
    o.label(0, 29, BRIGHT, "STACKBENCH MAIN MENU")
        .label(2, 1, PROTECTED, &format!("USER {user}"))
        .label(4, 1, PROTECTED, "1  ACCOUNT INQUIRY")
        .label(7, 1, PROTECTED, "OPTION ===>")
        .input(OPTION, 2, INPUT);
    if !message.is_empty() {
        o.label(21, 1, BRIGHT, message);
    }
    o.label(23, 1, PROTECTED, "ENTER=SELECT  PF3=LOGOFF")
        .cursor(OPTION);
    o.0
}

fn account(user: &str) -> Vec<u8> {
    let mut o = Out::new();
    o.label(0, 29, BRIGHT, "ACCOUNT INQUIRY")
        .label(1, 1, PROTECTED, &format!("USER {user}"));
    for i in 0..18u16 {
        let n = u32::from(i) + 1;
        let line = format!(
            "ACCOUNT {n:06}  {user:<8}  OPENED 2026-{:02}-{:02}  BALANCE {:>10}.{:02}",
            n % 12 + 1,
            n % 28 + 1,
            n * 1234 % 100_000,
            n * 7 % 100
        );
        o.label(3 + i, 1, PROTECTED, &line);
    }
    o.label(23, 1, PROTECTED, "PF3=RETURN");
    o.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::tn3270::screen::Screen;

    fn on_screen(record: &[u8]) -> Screen {
        let mut s = Screen::of_model(2);
        s.apply(record).unwrap();
        s
    }

    /// A user's walk through the application on the terminal's own model.
    #[test]
    fn logon_menu_account_and_back() {
        let mut app = Demo::default();
        let mut screen = on_screen(&app.first_screen());
        assert!(screen.shows("STACKBENCH LOGON", Some((0, 29))));
        assert!(!screen.keyboard_locked());
        assert_eq!(screen.cursor(), USERID);
        let mut send = |screen: &mut Screen, aid: u8| {
            let mut data = Vec::new();
            screen.read_modified(aid, false, &mut data);
            data.iter().for_each(|&b| app.byte(b));
            let answer = app.answer();
            screen.apply(&answer).unwrap();
        };
        // ENTER without a user ID: refused.
        send(&mut screen, AID_ENTER);
        assert!(screen.shows("USERID REQUIRED", Some((21, 1))));
        let user = screen
            .find("USERID")
            .and_then(|a| screen.field_after(a))
            .unwrap();
        screen.type_at(user, "USER01").unwrap();
        screen.type_at(at(PASSWORD), "SECRET").unwrap();
        send(&mut screen, AID_ENTER);
        assert!(
            screen.shows("STACKBENCH MAIN MENU", None),
            "{}",
            screen.text()
        );
        assert!(screen.shows("USER USER01", Some((2, 1))));
        let (r, c) = screen.cursor();
        screen.type_at(screen.address(r, c), "7").unwrap();
        send(&mut screen, AID_ENTER);
        assert!(screen.shows("INVALID OPTION", None));
        let (r, c) = screen.cursor();
        screen.type_at(screen.address(r, c), "1").unwrap();
        send(&mut screen, AID_ENTER);
        assert!(screen.shows("ACCOUNT INQUIRY", None));
        assert!(
            screen.shows("ACCOUNT 000018  USER01", None),
            "{}",
            screen.text()
        );
        send(&mut screen, AID_PF3);
        assert!(screen.shows("STACKBENCH MAIN MENU", None));
        send(&mut screen, AID_PF3);
        assert!(screen.shows("LOGGED OFF", None));
        // The password field does not show what was typed.
        assert!(!screen.text().contains("SECRET"));
    }
}
