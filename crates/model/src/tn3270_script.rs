//! A TN3270 script (`tn3270_script FILE`): the screens a scripted terminal
//! drives, step by step, as TPNS or WSim scripts drive a real application.
//! The format is text, one statement a line (`#` begins a comment, strings
//! are in double quotes with `\"` and `\\` escapes), documented in
//! docs/transports.md:
//!
//! ```text
//! wait "STACKBENCH LOGON"                 # the first screen shows it
//! step logon                              # a transaction, named
//!   type "USER01" after "USERID"          # into the field after a label
//!   type "SECRET" at 5,20                 # at row 5, column 20 (from 1)
//!   key ENTER                             # the AID that sends the screen
//!   wait "MAIN MENU" at 1,2 timeout 5s    # the screen that answers it
//!   think 2s                              # before the next step's key
//! ```
//!
//! A step is a transaction: its `key` sent with the fields typed before
//! it, to the first screen that shows its `wait` text (without one, the
//! first screen that restores the keyboard). Its latency is recorded under
//! its name; a wait that is not met within its timeout (10 s unless given)
//! is an error of the step, counted with the screen seen instead, and the
//! session starts again (a new logon, the script from its first step).
//! A `wait` before the first step is what the logon's first screen must
//! show. The steps repeat in order for as long as the run lasts, so the
//! last step should lead back to the screen the first expects.
//!
//! Parsing is pure: [`Script::parse`] takes the text and the file name and
//! refuses it in one line naming the file, line and column and the fix.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::units::parse_duration;

/// The default wait for a screen.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Most steps a script may have (each has its own latency histogram per
/// worker in the driver).
pub const MAX_STEPS: usize = 64;
/// Longest text of a `wait` or `type`.
pub const MAX_TEXT: usize = 256;

/// An attention key (AID) and its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aid {
    pub code: u8,
    /// A short read: the AID alone is sent (CLEAR, PA1–PA3), no cursor
    /// address and no field.
    pub short: bool,
}

/// `ENTER`, `CLEAR`, `PA1`–`PA3`, `PF1`–`PF24` as their AID.
pub fn aid(name: &str) -> Option<Aid> {
    const PF: [u8; 24] = [
        0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8, 0xF9, 0x7A, 0x7B, 0x7C, 0xC1, 0xC2, 0xC3,
        0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0x4A, 0x4B, 0x4C,
    ];
    let up = name.to_ascii_uppercase();
    let long = |code| Some(Aid { code, short: false });
    let short = |code| Some(Aid { code, short: true });
    match up.as_str() {
        "ENTER" => long(0x7D),
        "CLEAR" => short(0x6D),
        "PA1" => short(0x6C),
        "PA2" => short(0x6E),
        "PA3" => short(0x6B),
        _ => {
            let n: usize = up.strip_prefix("PF")?.parse().ok()?;
            (1..=24).contains(&n).then(|| long(PF[n - 1]))?
        }
    }
}

/// A screen position, row and column from 0 (written from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub row: u16,
    pub col: u16,
}

/// What a screen must show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub text: String,
    /// Where (`None`: anywhere on the screen).
    pub at: Option<Position>,
    pub timeout: Duration,
}

/// Where a `type` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// At the cursor.
    Cursor,
    At(Position),
    /// Into the first unprotected field after this text.
    After(String),
}

/// Text typed into a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Type {
    pub text: String,
    pub target: Target,
    /// The script's line, for the line that explains a failure.
    pub line: usize,
}

/// One transaction of the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    pub types: Vec<Type>,
    pub key: Aid,
    /// The key's name as written (upper case).
    pub key_name: String,
    pub wait: Option<Wait>,
    pub think: Option<Duration>,
}

impl Step {
    /// How long its answer may take.
    pub fn timeout(&self) -> Duration {
        self.wait.as_ref().map_or(DEFAULT_TIMEOUT, |w| w.timeout)
    }
}

/// A parsed script, with its text (what travels to agents, and what the
/// record's settings name by file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// What the first screen must show.
    pub first: Option<Wait>,
    pub steps: Vec<Step>,
    /// The file it came from, for messages.
    pub file: String,
    pub source: String,
}

/// A script the parser refused: `file:line:column: what; the fix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError(pub String);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A line's words: bare words and quoted strings, each with its column
/// (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Word {
    Bare(String),
    Quoted(String),
}

fn words(line: &str) -> Result<Vec<(usize, Word)>, (usize, String)> {
    let mut out = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '#' {
            break;
        } else if c == '"' {
            let col = i + 1;
            let mut text = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => {
                        return Err((
                            col,
                            "a string without its closing \": end it with \"".to_string(),
                        ))
                    }
                    Some('"') => break,
                    Some('\\') => {
                        match chars.get(i + 1) {
                            Some(&e @ ('"' | '\\')) => text.push(e),
                            _ => {
                                return Err((
                                    i + 1,
                                    "an unknown escape: write \\\" or \\\\ only".to_string(),
                                ))
                            }
                        }
                        i += 1;
                    }
                    Some(&c) => text.push(c),
                }
                i += 1;
            }
            i += 1;
            out.push((col, Word::Quoted(text)));
        } else {
            let col = i + 1;
            let mut text = String::new();
            while i < chars.len() && !chars[i].is_whitespace() && chars[i] != '#' {
                text.push(chars[i]);
                i += 1;
            }
            out.push((col, Word::Bare(text)));
        }
    }
    Ok(out)
}

/// Characters a 3270 screen shows (what the driver can type and find):
/// printable ASCII.
fn screen_text(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("an empty string: give the text to look for or type".to_string());
    }
    if text.len() > MAX_TEXT {
        return Err(format!(
            "a string longer than {MAX_TEXT} characters: shorten it"
        ));
    }
    match text.chars().find(|c| !(' '..='~').contains(c)) {
        Some(c) => Err(format!(
            "{c:?} is not on a 3270 screen's keyboard: use printable ASCII (it is sent as \
             EBCDIC code page 037)"
        )),
        None => Ok(()),
    }
}

impl Script {
    /// Parses `source` (from `file`, named in errors) for a screen of
    /// `rows`×`cols`: positions must be on it.
    pub fn parse(
        file: &str,
        source: &str,
        (rows, cols): (u16, u16),
    ) -> Result<Script, ScriptError> {
        let err = |line: usize, col: usize, msg: String| {
            ScriptError(format!("{file}:{line}:{col}: {msg}"))
        };
        let mut first: Option<Wait> = None;
        let mut steps: Vec<Step> = Vec::new();
        // The step being read: its name, types, key (with its line), wait, think.
        struct Open {
            name: String,
            line: usize,
            types: Vec<Type>,
            key: Option<(Aid, String)>,
            wait: Option<Wait>,
            think: Option<Duration>,
        }
        let mut open: Option<Open> = None;
        let close = |open: Option<Open>, steps: &mut Vec<Step>| -> Result<(), ScriptError> {
            let Some(o) = open else { return Ok(()) };
            let Some((key, key_name)) = o.key else {
                return Err(err(
                    o.line,
                    1,
                    format!(
                        "step {} presses no key: add a line 'key ENTER' (or PF1-PF24, PA1-PA3, \
                         CLEAR) to it",
                        o.name
                    ),
                ));
            };
            steps.push(Step {
                name: o.name,
                types: o.types,
                key,
                key_name,
                wait: o.wait,
                think: o.think,
            });
            Ok(())
        };
        for (n, text) in source.lines().enumerate() {
            let line = n + 1;
            let ws = words(text).map_err(|(col, msg)| err(line, col, msg))?;
            let Some((col0, Word::Bare(verb))) = ws.first().cloned() else {
                if let Some((col, Word::Quoted(_))) = ws.first() {
                    return Err(err(
                        line,
                        *col,
                        "a line begins with a statement (wait, step, type, key, think), not a \
                         string"
                            .to_string(),
                    ));
                }
                continue;
            };
            let rest = &ws[1..];
            // The next word at `i`, or the line's end.
            let end_col = text.chars().count() + 1;
            let col_of = |i: usize| rest.get(i).map_or(end_col, |(c, _)| *c);
            let quoted = |i: usize, what: &str| -> Result<String, ScriptError> {
                match rest.get(i) {
                    Some((c, Word::Quoted(s))) => {
                        screen_text(s).map_err(|m| err(line, *c, m))?;
                        Ok(s.clone())
                    }
                    Some((c, Word::Bare(b))) => Err(err(
                        line,
                        *c,
                        format!("{what} is a string in double quotes: write \"{b}\""),
                    )),
                    None => Err(err(
                        line,
                        end_col,
                        format!("{verb} needs {what} in double quotes, e.g. {verb} \"MAIN MENU\""),
                    )),
                }
            };
            let bare = |i: usize| match rest.get(i) {
                Some((_, Word::Bare(b))) => Some(b.as_str()),
                _ => None,
            };
            let position = |i: usize| -> Result<Position, ScriptError> {
                let c = col_of(i);
                let Some(text) = bare(i) else {
                    return Err(err(
                        line,
                        c,
                        "at needs ROW,COL (from 1), e.g. at 5,20".to_string(),
                    ));
                };
                let parsed = text.split_once(',').and_then(|(r, c)| {
                    Some((r.trim().parse::<u16>().ok()?, c.trim().parse::<u16>().ok()?))
                });
                match parsed {
                    Some((r, cc)) if (1..=rows).contains(&r) && (1..=cols).contains(&cc) => {
                        Ok(Position {
                            row: r - 1,
                            col: cc - 1,
                        })
                    }
                    Some((r, cc)) => Err(err(
                        line,
                        c,
                        format!(
                            "{r},{cc} is off the screen: a {rows}x{cols} screen has rows 1 to \
                             {rows} and columns 1 to {cols} (tn3270_model sets the size)"
                        ),
                    )),
                    None => Err(err(
                        line,
                        c,
                        format!("'{text}' is not a position: write ROW,COL (from 1), e.g. 5,20"),
                    )),
                }
            };
            let extra = |i: usize| -> Result<(), ScriptError> {
                match rest.get(i) {
                    Some((c, _)) => Err(err(
                        line,
                        *c,
                        format!("{verb} takes nothing more here: remove it, or begin a new line"),
                    )),
                    None => Ok(()),
                }
            };
            match verb.as_str() {
                "step" => {
                    let Some(name) = bare(0) else {
                        return Err(err(
                            line,
                            col_of(0),
                            "step needs a name (letters, digits, _ and -), e.g. step logon"
                                .to_string(),
                        ));
                    };
                    if name.is_empty()
                        || name.len() > 32
                        || !name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        return Err(err(
                            line,
                            col_of(0),
                            format!(
                                "'{name}' is not a step name: use 1 to 32 letters, digits, _ \
                                 and -"
                            ),
                        ));
                    }
                    let taken = steps.iter().any(|s| s.name == name)
                        || open.as_ref().is_some_and(|o| o.name == name);
                    if taken {
                        return Err(err(
                            line,
                            col_of(0),
                            format!(
                                "a second step named {name}: each step's latency is recorded \
                                 under its name, so give it another"
                            ),
                        ));
                    }
                    extra(1)?;
                    close(open.take(), &mut steps)?;
                    if steps.len() == MAX_STEPS {
                        return Err(err(
                            line,
                            col0,
                            format!("more than {MAX_STEPS} steps: split the script"),
                        ));
                    }
                    open = Some(Open {
                        name: name.to_string(),
                        line,
                        types: Vec::new(),
                        key: None,
                        wait: None,
                        think: None,
                    });
                }
                "wait" => {
                    let text = quoted(0, "the text to wait for")?;
                    let mut wait = Wait {
                        text,
                        at: None,
                        timeout: DEFAULT_TIMEOUT,
                    };
                    let mut i = 1;
                    while let Some(word) = bare(i) {
                        match word {
                            "at" => {
                                let p = position(i + 1)?;
                                if usize::from(p.col) + wait.text.len() > usize::from(cols) {
                                    return Err(err(
                                        line,
                                        col_of(i + 1),
                                        format!(
                                            "\"{}\" at column {} runs past the row's end \
                                             (column {cols}): give an earlier column",
                                            wait.text,
                                            p.col + 1
                                        ),
                                    ));
                                }
                                wait.at = Some(p);
                            }
                            "timeout" => {
                                let c = col_of(i + 1);
                                let t = bare(i + 1).ok_or_else(|| {
                                    err(line, c, "timeout needs a duration, e.g. 5s".to_string())
                                })?;
                                wait.timeout = parse_duration(t)
                                    .ok()
                                    .filter(|d| !d.is_zero() && *d <= Duration::from_secs(3600))
                                    .ok_or_else(|| {
                                        err(
                                            line,
                                            c,
                                            format!(
                                                "'{t}' is not a timeout: give 1ms to 1h, e.g. 5s"
                                            ),
                                        )
                                    })?;
                            }
                            other => {
                                return Err(err(
                                    line,
                                    col_of(i),
                                    format!(
                                        "wait takes 'at ROW,COL' and 'timeout DURATION', not \
                                         '{other}'"
                                    ),
                                ))
                            }
                        }
                        i += 2;
                    }
                    extra(i)?;
                    match open.as_mut() {
                        None if steps.is_empty() && first.is_none() => first = Some(wait),
                        None => {
                            return Err(err(
                                line,
                                col0,
                                "a wait outside a step after the first screen's: put it in the \
                                 step whose key it answers"
                                    .to_string(),
                            ))
                        }
                        Some(o) if o.key.is_none() => {
                            return Err(err(
                                line,
                                col0,
                                format!(
                                    "step {}'s wait comes before its key: a step's wait is the \
                                     screen that answers its key, so put it after 'key'",
                                    o.name
                                ),
                            ))
                        }
                        Some(o) if o.wait.is_some() => {
                            return Err(err(
                                line,
                                col0,
                                format!(
                                    "step {} has a second wait: one screen answers a key; \
                                     begin a new step for the next",
                                    o.name
                                ),
                            ))
                        }
                        Some(o) => o.wait = Some(wait),
                    }
                }
                "type" => {
                    let text = quoted(0, "the text to type")?;
                    let target = match bare(1) {
                        None if rest.len() == 1 => Target::Cursor,
                        Some("at") => {
                            let p = position(2)?;
                            extra(3)?;
                            Target::At(p)
                        }
                        Some("after") => {
                            let label = quoted(2, "the label")?;
                            extra(3)?;
                            Target::After(label)
                        }
                        _ => {
                            return Err(err(
                                line,
                                col_of(1),
                                "type goes at the cursor, 'at ROW,COL' or 'after \"LABEL\"'"
                                    .to_string(),
                            ))
                        }
                    };
                    let Some(o) = open.as_mut() else {
                        return Err(err(
                            line,
                            col0,
                            "type outside a step: begin one with 'step NAME'".to_string(),
                        ));
                    };
                    if o.key.is_some() {
                        return Err(err(
                            line,
                            col0,
                            format!(
                                "step {} types after its key: fields are typed before the key \
                                 that sends them; begin a new step",
                                o.name
                            ),
                        ));
                    }
                    o.types.push(Type { text, target, line });
                }
                "key" => {
                    let c = col_of(0);
                    let name = bare(0).ok_or_else(|| {
                        err(
                            line,
                            c,
                            "key needs an AID: ENTER, CLEAR, PA1-PA3 or PF1-PF24".to_string(),
                        )
                    })?;
                    let a = aid(name).ok_or_else(|| {
                        err(
                            line,
                            c,
                            format!(
                                "'{name}' is not an AID key: use ENTER, CLEAR, PA1-PA3 or \
                                 PF1-PF24"
                            ),
                        )
                    })?;
                    extra(1)?;
                    let Some(o) = open.as_mut() else {
                        return Err(err(
                            line,
                            col0,
                            "key outside a step: begin one with 'step NAME'".to_string(),
                        ));
                    };
                    if o.key.is_some() {
                        return Err(err(
                            line,
                            col0,
                            format!(
                                "step {} presses a second key: a step is one key and the \
                                 screen that answers it; begin a new step",
                                o.name
                            ),
                        ));
                    }
                    o.key = Some((a, name.to_ascii_uppercase()));
                }
                "think" => {
                    let c = col_of(0);
                    let t = bare(0).ok_or_else(|| {
                        err(
                            line,
                            c,
                            "think needs a duration, e.g. think 30s".to_string(),
                        )
                    })?;
                    let d = parse_duration(t)
                        .ok()
                        .filter(|d| *d <= Duration::from_secs(24 * 3600))
                        .ok_or_else(|| {
                            err(
                                line,
                                c,
                                format!("'{t}' is not a think time: give 0s to 24h, e.g. 30s"),
                            )
                        })?;
                    extra(1)?;
                    match open.as_mut() {
                        Some(o) if o.key.is_some() && o.think.is_none() => o.think = Some(d),
                        _ => {
                            return Err(err(
                                line,
                                col0,
                                "think belongs in a step, after its key (the time before the \
                                 next step's key), once"
                                    .to_string(),
                            ))
                        }
                    }
                }
                other => {
                    return Err(err(
                        line,
                        col0,
                        format!("unknown statement '{other}': use wait, step, type, key or think"),
                    ))
                }
            }
        }
        close(open.take(), &mut steps)?;
        if steps.is_empty() {
            return Err(ScriptError(format!(
                "{file}: no step: add at least one ('step NAME' then 'key ENTER')"
            )));
        }
        Ok(Script {
            first,
            steps,
            file: file.to_string(),
            source: source.to_string(),
        })
    }

    /// The one copy of a script in this process (so options holding it stay
    /// `Copy`): one per distinct script a process runs, never per run.
    pub fn intern(script: Script) -> &'static Script {
        use std::sync::{Mutex, OnceLock};
        static SCRIPTS: OnceLock<Mutex<Vec<&'static Script>>> = OnceLock::new();
        let mut all = SCRIPTS
            .get_or_init(|| Mutex::new(Vec::new()))
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(s) = all.iter().find(|s| ***s == script) {
            return s;
        }
        let s: &'static Script = Box::leak(Box::new(script));
        all.push(s);
        s
    }
}

/// What travels (agent wire, control): the file's name and text, parsed
/// again at the other end.
#[derive(Serialize, Deserialize)]
struct Wire {
    file: String,
    source: String,
    rows: u16,
    cols: u16,
}

/// A script as the options hold it: interned, `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptRef(pub &'static Script);

impl ScriptRef {
    /// The largest screen any model has: positions were checked against
    /// the run's model when the file was read.
    const ANY: (u16, u16) = (43, 132);
}

impl Serialize for ScriptRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            file: self.0.file.clone(),
            source: self.0.source.clone(),
            rows: ScriptRef::ANY.0,
            cols: ScriptRef::ANY.1,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ScriptRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        Script::parse(&w.file, &w.source, (w.rows, w.cols))
            .map(|s| ScriptRef(Script::intern(s)))
            .map_err(|e| serde::de::Error::custom(e.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
# the demo application
wait "STACKBENCH LOGON" at 1,30
step logon
  type "USER01" after "USERID"
  type "SECRET" at 6,20
  key ENTER
  wait "MAIN MENU" timeout 5s
step inquiry
  type "1"
  key enter
  wait "ACCOUNT \"INQUIRY\""
  think 2s
step back
  key PF3
"#;

    fn parse(text: &str) -> Result<Script, ScriptError> {
        Script::parse("s.txt", text, (24, 80))
    }

    #[test]
    fn a_script_parses_into_steps() {
        let s = parse(GOOD).unwrap();
        assert_eq!(
            s.first,
            Some(Wait {
                text: "STACKBENCH LOGON".into(),
                at: Some(Position { row: 0, col: 29 }),
                timeout: DEFAULT_TIMEOUT
            })
        );
        let names: Vec<&str> = s.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["logon", "inquiry", "back"]);
        assert_eq!(s.steps[0].types.len(), 2);
        assert_eq!(s.steps[0].types[0].target, Target::After("USERID".into()));
        assert_eq!(
            s.steps[0].types[1].target,
            Target::At(Position { row: 5, col: 19 })
        );
        assert_eq!(s.steps[0].timeout(), Duration::from_secs(5));
        assert_eq!(s.steps[1].types[0].target, Target::Cursor);
        assert_eq!(
            s.steps[1].key,
            Aid {
                code: 0x7D,
                short: false
            }
        );
        assert_eq!(
            s.steps[1].wait.as_ref().unwrap().text,
            "ACCOUNT \"INQUIRY\""
        );
        assert_eq!(s.steps[1].think, Some(Duration::from_secs(2)));
        assert_eq!(
            s.steps[2].key,
            Aid {
                code: 0xF3,
                short: false
            }
        );
        assert_eq!(s.steps[2].wait, None);
        // It travels as its text and comes back the same.
        let r = ScriptRef(Script::intern(s));
        let json = serde_json::to_string(&r).unwrap();
        let back: ScriptRef = serde_json::from_str(&json).unwrap();
        assert_eq!(back.0.steps, r.0.steps);
    }

    #[test]
    fn aids_cover_the_keyboard() {
        assert_eq!(aid("pf12").unwrap().code, 0x7C);
        assert_eq!(aid("PF24").unwrap().code, 0x4C);
        assert!(aid("CLEAR").unwrap().short);
        assert!(aid("PA2").unwrap().short);
        assert!(aid("PF25").is_none());
        assert!(aid("PF0").is_none());
        assert!(aid("ESC").is_none());
    }

    #[test]
    fn errors_name_file_line_column_and_the_fix() {
        let cases: &[(&str, &str)] = &[
            (
                "step a\n  key ESC",
                "s.txt:2:7: 'ESC' is not an AID key: use ENTER",
            ),
            (
                "step a\n  type \"X\" at 25,1\n  key ENTER",
                "s.txt:2:15: 25,1 is off the screen",
            ),
            (
                "step a\n  type \"X\" at 1,81\n  key ENTER",
                "s.txt:2:15: 1,81 is off the screen",
            ),
            (
                "step a\n  type \"X\" at x\n  key ENTER",
                "s.txt:2:15: 'x' is not a position",
            ),
            (
                "step a\n  wait \"X\"\n  key ENTER",
                "s.txt:2:3: step a's wait comes before its key",
            ),
            (
                "step a\n  key ENTER\n  key PF3",
                "s.txt:3:3: step a presses a second key",
            ),
            ("step a\n  type \"X\"", "s.txt:1:1: step a presses no key"),
            (
                "step a\n key ENTER\nstep a\n key ENTER",
                "s.txt:3:6: a second step named a",
            ),
            (
                "wait MENU",
                "s.txt:1:6: the text to wait for is a string in double quotes",
            ),
            ("wait \"MENU", "s.txt:1:6: a string without its closing"),
            ("jump 3", "s.txt:1:1: unknown statement 'jump'"),
            (
                "step a\n key ENTER\n wait \"X\" timeout 0s",
                "s.txt:3:19: '0s' is not a timeout",
            ),
            (
                "step a\n key ENTER\n wait \"X\" within 2s",
                "s.txt:3:11: wait takes 'at ROW,COL'",
            ),
            (
                "step a\n key ENTER\n think",
                "s.txt:3:7: think needs a duration",
            ),
            (
                "step a\n think 2s\n key ENTER",
                "s.txt:2:2: think belongs in a step, after its key",
            ),
            ("type \"X\"", "s.txt:1:1: type outside a step"),
            ("# nothing", "s.txt: no step"),
            (
                "step a\n type \"é\"\n key ENTER",
                "s.txt:2:7: 'é' is not on a 3270 screen's keyboard",
            ),
            (
                "step a\n key ENTER\n wait \"ABC\" at 1,79",
                "s.txt:3:16: \"ABC\" at column 79 runs past",
            ),
            (
                "step a\n key ENTER extra",
                "s.txt:2:12: key takes nothing more here",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text).expect_err(text);
            assert!(e.0.starts_with(want), "{text:?}: {e}");
        }
    }
}
