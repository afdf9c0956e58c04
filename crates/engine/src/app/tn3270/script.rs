//! A scripted terminal's session (`tn3270_script`): the screen the
//! server's records built ([`Screen`]), the step under way, and the
//! inbound record its key sends. The codec (`client.rs`) hands it each
//! outbound record's bytes; once a 3270-DATA record ends it is applied to
//! the screen, and the step's transaction is complete when the screen
//! shows the step's wait text (or, without one, when a record restored the
//! keyboard). Then the next step's fields are typed and its key's record
//! built, so the machine finds the next request ready: a step costs one
//! pass over each record received and one over the screen per `type` and
//! key. Between transactions a session keeps its screen (a model 2's 1,920
//! cells and its fields) and its next request, about 2.1 KiB; a screen
//! record over 512 bytes is read into a buffer freed once it is applied.

use stackbench_model::tn3270_script::{Script, Step, Target};

use super::screen::Screen;
use super::{push_escaped, Fault, Framing, DT_3270_DATA, EOR, IAC, SLACK_BYTES};

/// Capacity of the record buffer kept between records (larger screens'
/// buffers are freed once applied).
const RECORD_KEPT: usize = 512;

/// A scripted session's state (boxed in the codec's session: an
/// unscripted terminal keeps a null pointer).
#[derive(Debug)]
pub struct Scripted {
    script: &'static Script,
    screen: Screen,
    /// The step whose key is sent next, or whose answer is awaited.
    step: usize,
    /// The outbound record being read (header included).
    record: Vec<u8>,
    /// The request: the step's inbound record as it goes on the wire.
    request: Vec<u8>,
    /// The step the last response completed.
    done: Option<usize>,
}

impl Scripted {
    pub fn new(script: &'static Script, model: u8) -> Scripted {
        Scripted {
            script,
            screen: Screen::of_model(model),
            step: 0,
            record: Vec::new(),
            request: Vec::new(),
            done: None,
        }
    }

    /// One byte of an outbound record (its header included).
    pub fn byte(&mut self, b: u8) -> Result<(), Fault> {
        if self.record.len() as u64 >= SLACK_BYTES {
            return Err(Fault(format!(
                "a screen record longer than {SLACK_BYTES} bytes: no 3270 screen is that long \
                 (is the server sending 3270 data?)"
            )));
        }
        self.record.push(b);
        Ok(())
    }

    /// The record ended: applies it to the screen when it is 3270 data
    /// (`data`), and forgets its bytes either way.
    fn apply(&mut self, data: bool, framing: Framing) -> Result<(), Fault> {
        let result = if data {
            let start = framing.header_bytes().min(self.record.len());
            self.screen.apply(&self.record[start..]).map_err(|e| {
                Fault(format!(
                    "{}: a screen the 3270 model could not apply ({e}) during step {}",
                    self.script.file,
                    self.current().name
                ))
            })
        } else {
            Ok(())
        };
        self.record.clear();
        if self.record.capacity() > RECORD_KEPT {
            // A large screen's buffer is not kept between transactions:
            // idle sessions (most of them, at 30 s of think) hold their
            // screen and request only.
            self.record = Vec::new();
        }
        result
    }

    /// A record that is no screen (BIND image, response) or was refused
    /// ended: its bytes are dropped.
    pub fn skip(&mut self) {
        self.record.clear();
    }

    fn current(&self) -> &'static Step {
        &self.script.steps[self.step]
    }

    /// The logon's first screen ended: it must show the script's first
    /// wait, if it has one; then the first step's request is built.
    pub(super) fn logged_on(&mut self, framing: Framing) -> Result<(), Fault> {
        self.apply(true, framing)?;
        if let Some(w) = &self.script.first {
            let at = w.at.map(|p| (p.row, p.col));
            if !self.screen.shows(&w.text, at) {
                return Err(Fault(format!(
                    "{}: the first screen does not show \"{}\"{}: it reads {}",
                    self.script.file,
                    w.text,
                    w.at.map(|p| format!(" at {},{}", p.row + 1, p.col + 1))
                        .unwrap_or_default(),
                    self.seen()
                )));
            }
        }
        self.build(framing)
    }

    /// A 3270-DATA record ended during a step: whether it completed the
    /// step (the screen shows the step's wait, or without one the keyboard
    /// is restored); then the next step's request is ready.
    pub(super) fn answered(&mut self, framing: Framing) -> Result<bool, Fault> {
        self.apply(true, framing)?;
        let step = self.current();
        let met = match &step.wait {
            Some(w) => self.screen.shows(&w.text, w.at.map(|p| (p.row, p.col))),
            None => !self.screen.keyboard_locked(),
        };
        if met {
            self.done = Some(self.step);
            self.step = (self.step + 1) % self.script.steps.len();
            self.build(framing)?;
        }
        Ok(met)
    }

    /// Types the current step's fields and builds its key's record.
    fn build(&mut self, framing: Framing) -> Result<(), Fault> {
        let step = self.current();
        let file = &self.script.file;
        for t in &step.types {
            let address = match &t.target {
                Target::Cursor => {
                    let (r, c) = self.screen.cursor();
                    self.screen.address(r, c)
                }
                Target::At(p) => self.screen.address(p.row, p.col),
                Target::After(label) => {
                    let found = self
                        .screen
                        .find(label)
                        .and_then(|a| self.screen.field_after(a));
                    found.ok_or_else(|| {
                        Fault(format!(
                            "{file}:{}: step {}: no input field after \"{label}\" on the \
                             screen, which reads {}",
                            t.line,
                            step.name,
                            self.seen()
                        ))
                    })?
                }
            };
            self.screen
                .type_at(address, &t.text)
                .map_err(|e| Fault(format!("{file}:{}: step {}: {e}", t.line, step.name)))?;
        }
        let mut data = Vec::new();
        self.screen
            .read_modified(step.key.code, step.key.short, &mut data);
        self.request.clear();
        if framing == Framing::Tn3270e {
            self.request.extend_from_slice(&[DT_3270_DATA, 0, 0, 0, 0]);
        }
        push_escaped(&mut self.request, &data);
        self.request.extend_from_slice(&[IAC, EOR]);
        Ok(())
    }

    /// The request's bytes on the wire.
    pub fn request(&self) -> &[u8] {
        &self.request
    }

    pub fn done(&self) -> Option<usize> {
        self.done
    }

    pub fn think_ns(&self) -> Option<u64> {
        let step = self.script.steps[self.done?].think?;
        Some(step.as_nanos() as u64)
    }

    pub fn timeout_ns(&self) -> u64 {
        self.current().timeout().as_nanos() as u64
    }

    /// The step under way, and the screen it shows.
    pub fn timed_out(&self) -> (usize, String) {
        (self.step, self.seen())
    }

    /// The screen's non-blank rows, trimmed, joined by ` | ` (at most 400
    /// characters): what a line shows of it.
    pub fn seen(&self) -> String {
        let (rows, _) = self.screen.size();
        let text: Vec<String> = (0..rows)
            .map(|r| self.screen.row_text(r))
            .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|r| !r.is_empty())
            .collect();
        if text.is_empty() {
            return "a blank screen".to_string();
        }
        let mut line = format!("\"{}\"", text.join(" | "));
        if line.len() > 400 {
            line.truncate(397);
            line.push_str("...");
        }
        line
    }

    /// Bytes the session keeps for its screen and records.
    pub fn heap_bytes(&self) -> usize {
        self.screen.heap_bytes() + self.record.capacity() + self.request.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::tn3270::demo::Demo;

    /// A scripted session against the demo application, record by record
    /// in plain TN3270 framing: each step's request is what the
    /// application reads, each answer meets the next wait, and the session
    /// keeps at most 4 KiB for its screen and records.
    #[test]
    fn a_session_walks_the_demo_in_under_4_kib() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/tn3270/demo.script"
        ))
        .unwrap();
        let script = Script::intern(Script::parse("demo.script", &text, (24, 80)).unwrap());
        let mut app = Demo::default();
        let mut s = Scripted::new(script, 2);
        app.first_screen().iter().for_each(|&b| s.byte(b).unwrap());
        s.logged_on(Framing::Tn3270).unwrap();
        let mut bytes = Vec::new();
        for round in 0..8 {
            let step = s.step;
            // The request without IAC EOR is what the application reads.
            let request = s.request().to_vec();
            assert_eq!(&request[request.len() - 2..], &[IAC, EOR]);
            request[..request.len() - 2]
                .iter()
                .for_each(|&b| app.byte(b));
            let answer = app.answer();
            answer.iter().for_each(|&b| s.byte(b).unwrap());
            assert!(
                s.answered(Framing::Tn3270).unwrap(),
                "round {round}: {}",
                s.seen()
            );
            assert_eq!(s.done(), Some(step));
            bytes.push(s.heap_bytes());
        }
        // Measured: 2,080 to 2,336 bytes.
        assert!(bytes.iter().all(|&b| b <= 4096), "{bytes:?}");
        // Without its wait text the answer does not complete a step: the
        // logon step's screen is the menu, never the account screen.
        let mut s = Scripted::new(script, 2);
        let mut app = Demo::default();
        app.first_screen().iter().for_each(|&b| s.byte(b).unwrap());
        s.logged_on(Framing::Tn3270).unwrap();
        app.first_screen().iter().for_each(|&b| s.byte(b).unwrap());
        assert!(!s.answered(Framing::Tn3270).unwrap());
        let (step, seen) = s.timed_out();
        assert_eq!(step, 0);
        assert!(seen.contains("STACKBENCH LOGON"), "{seen}");
    }
}
