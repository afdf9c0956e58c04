//! What passes between host and guest: the job file the host puts in the
//! initramfs (`/sb/job.json`), and the framed results the guest writes on
//! its second serial port (ttyS1), which qemu writes to a host file.
//!
//! The results are text lines `SB <KIND> [payload]`, binary payloads in
//! base64: a serial line may turn `\n` into `\r\n` (the guest sets it raw,
//! but base64 makes that irrelevant) and the host may read the file while the
//! guest is still writing, so a reader skips unknown or partial lines and
//! trusts the result only once `SB END` arrived.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Serialize};

/// Where the job file lies in the guest.
pub const JOB_PATH: &str = "/sb/job.json";

/// The job as the guest reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobFile {
    /// The stackbench arguments (after the program name).
    pub args: Vec<String>,
    /// The host's timeout for the whole guest run, seconds (for messages).
    pub timeout_s: f64,
}

/// Raw bytes per `OUT`/`ERR` line: 3 KiB → 4 KiB of base64.
const CHUNK: usize = 3 * 1024;

/// The lines the guest writes once its job ended.
pub fn encode_result(release: &str, stdout: &[u8], stderr: &[u8], status: i32) -> Vec<u8> {
    let mut out = format!("SB RELEASE {}\n", STANDARD.encode(release));
    for (kind, bytes) in [("OUT", stdout), ("ERR", stderr)] {
        for chunk in bytes.chunks(CHUNK) {
            out.push_str(&format!("SB {kind} {}\n", STANDARD.encode(chunk)));
        }
    }
    out.push_str(&format!("SB STATUS {status}\nSB END\n"));
    out.into_bytes()
}

/// The lines the guest writes when it cannot run the job.
pub fn encode_failure(message: &str) -> Vec<u8> {
    format!("SB FAIL {}\nSB END\n", STANDARD.encode(message)).into_bytes()
}

/// The ready line, written once init has mounted and configured the guest.
pub const READY: &[u8] = b"SB READY\n";

/// What the host has read from the results port so far.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Frames {
    pub ready: bool,
    pub release: Option<String>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: Option<i32>,
    pub failure: Option<String>,
    pub end: bool,
}

/// Parses the results port's bytes so far (complete lines only).
pub fn decode(bytes: &[u8]) -> Frames {
    let mut frames = Frames::default();
    let complete = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(last) => &bytes[..=last],
        None => return frames,
    };
    for line in complete.split(|&b| b == b'\n') {
        let line = String::from_utf8_lossy(line);
        let mut parts = line.trim().splitn(3, ' ');
        if parts.next() != Some("SB") {
            continue;
        }
        let kind = parts.next().unwrap_or_default();
        let payload = parts.next().unwrap_or_default();
        let bytes = || STANDARD.decode(payload).unwrap_or_default();
        let text = || String::from_utf8_lossy(&bytes()).into_owned();
        match kind {
            "READY" => frames.ready = true,
            "RELEASE" => frames.release = Some(text()),
            "OUT" => frames.stdout.extend(bytes()),
            "ERR" => frames.stderr.extend(bytes()),
            "STATUS" => frames.status = payload.parse().ok(),
            "FAIL" => frames.failure = Some(text()),
            "END" => frames.end = true,
            _ => {}
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_round_trip_any_bytes() {
        let stdout: Vec<u8> = (0..10_000u32).map(|i| (i % 256) as u8).collect();
        let stderr = b"line one\r\nline two\n\0end".to_vec();
        let mut wire = READY.to_vec();
        wire.extend(encode_result("6.1.0-48-cloud-amd64", &stdout, &stderr, 3));
        let f = decode(&wire);
        assert!(f.ready && f.end);
        assert_eq!(f.release.as_deref(), Some("6.1.0-48-cloud-amd64"));
        assert_eq!(f.stdout, stdout);
        assert_eq!(f.stderr, stderr);
        assert_eq!(f.status, Some(3));
        assert_eq!(f.failure, None);
    }

    #[test]
    fn crlf_and_console_noise_are_ignored() {
        let wire = encode_result("r", b"{\"a\":1}\n", b"", 0);
        let mut noisy = b"garbage\r\n".to_vec();
        noisy.extend(
            String::from_utf8(wire)
                .unwrap()
                .replace('\n', "\r\n")
                .into_bytes(),
        );
        let f = decode(&noisy);
        assert_eq!(f.stdout, b"{\"a\":1}\n");
        assert_eq!(f.status, Some(0));
        assert!(f.end);
    }

    #[test]
    fn a_partial_stream_is_not_ended() {
        let wire = encode_result("r", b"x", b"y", 0);
        let f = decode(&wire[..wire.len() - 3]);
        assert!(!f.end);
        assert_eq!(f.status, Some(0));
    }

    #[test]
    fn failures_carry_their_message() {
        let f = decode(&encode_failure("cannot mount /proc: EPERM"));
        assert_eq!(f.failure.as_deref(), Some("cannot mount /proc: EPERM"));
        assert!(f.end);
    }

    #[test]
    fn the_job_file_round_trips() {
        let job = JobFile {
            args: vec!["run".into(), "RR1(1B/1B)".into()],
            timeout_s: 600.0,
        };
        let text = serde_json::to_string(&job).unwrap();
        assert_eq!(serde_json::from_str::<JobFile>(&text).unwrap(), job);
    }
}
