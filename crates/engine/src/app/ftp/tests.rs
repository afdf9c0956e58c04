//! The FTP codec against replies as servers send them: split anywhere,
//! multi-line, EPSV refused, and the faults a wrong server earns.

use super::*;
use crate::app::TargetHead;
use stackbench_model::settings::Tn3270Options;
use stackbench_model::{AmqpParams, CrrClose};

fn client(kind: Kind, request: u64, response: u64, path: Option<&str>) -> Client {
    Client::of(&ClassShape {
        h2: Default::default(),
        kind,
        request_bytes: request,
        response_bytes: response,
        crr_close: CrrClose::Server,
        target: path.map(|p| TargetHead::intern("127.0.0.1", Some(p))),
        tn3270: Tn3270Options::default(),
        amqp: AmqpParams::default(),
    })
}

/// The command the codec sends now (setup or request).
fn command(c: &Client, s: &Session) -> String {
    let mut out = vec![0; c.request_len(s) as usize];
    c.fill_request(s, 0, &mut out);
    String::from_utf8(out).unwrap()
}

/// Feeds `reply` one byte at a time as a response: complete at its end only.
fn reply(c: &Client, s: &mut Session, reply: &str) -> Result<Turn, Fault> {
    let bytes = reply.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let left = c.response_left(s, 1, 1, std::slice::from_ref(b))?;
        assert_eq!(left == 0, i + 1 == bytes.len(), "{reply:?} at {i}");
    }
    c.turn(s)
}

fn logged_on(c: &Client) -> Session {
    let mut s = Session::default();
    assert_eq!(c.setup_open(&mut s), Setup::Read);
    // A multi-line greeting split mid-line.
    assert_eq!(
        c.setup_received(&mut s, b"220-Welcome\r\n220-to"),
        Ok(Setup::Read)
    );
    assert_eq!(
        c.setup_received(&mut s, b" the test\r\n220 ready\r\n"),
        Ok(Setup::Send)
    );
    assert_eq!(command(c, &s), "USER anonymous\r\n");
    assert_eq!(
        c.setup_received(&mut s, b"331 Please specify the password.\r\n"),
        Ok(Setup::Send)
    );
    assert_eq!(command(c, &s), "PASS stackbench@\r\n");
    assert_eq!(
        c.setup_received(&mut s, b"230 Login successful.\r\n"),
        Ok(Setup::Send)
    );
    assert_eq!(command(c, &s), "TYPE I\r\n");
    assert_eq!(
        c.setup_received(&mut s, b"200 Switching to Binary mode.\r\n"),
        Ok(Setup::Done)
    );
    s
}

#[test]
fn the_larger_size_is_the_file_and_its_direction() {
    let get = client(Kind::Str, 1, 20_000_000, None);
    assert_eq!(
        (get.direction, get.file_bytes),
        (Direction::Retr, 20_000_000)
    );
    assert_eq!(get.file, "20000000");
    let put = client(Kind::Str, 20_000_000, 1, Some("/in/"));
    assert_eq!(
        (put.direction, put.file.as_str()),
        (Direction::Stor, "/in/20000000")
    );
    let one = client(Kind::Rr, 100, 800, Some("/pub/file.bin"));
    assert_eq!(
        (one.direction, one.file.as_str()),
        (Direction::Retr, "/pub/file.bin")
    );
    assert!(!one.quit && client(Kind::Crr, 64, 8192, None).quit);
}

#[test]
fn a_retr_over_epsv_completes_on_226_even_when_it_came_with_150() {
    let c = client(Kind::Rr, 100, 8192, Some("/up/"));
    let mut s = logged_on(&c);
    assert_eq!(command(&c, &s), "EPSV\r\n");
    let t = reply(
        &c,
        &mut s,
        "229 Entering Extended Passive Mode (|||40123|)\r\n",
    );
    assert_eq!(t, Ok(Turn::OpenData(40123)));
    assert_eq!(command(&c, &s), "RETR /up/8192\r\n");
    // The 150 and the 226 in one chunk: the 226 waits for the data's end.
    let chunk = b"150 Opening BINARY mode data connection.\r\n226 Transfer complete.\r\n";
    assert_eq!(
        c.response_left(&mut s, 4096, chunk.len() as u64, chunk),
        Ok(0)
    );
    assert_eq!(c.turn(&mut s), Ok(Turn::ReceiveData(8192)));
    assert_eq!(c.data_done(&mut s, 8192), Ok(Turn::Complete));
    // The next transfer starts with EPSV again.
    assert_eq!(command(&c, &s), "EPSV\r\n");
    let t = reply(&c, &mut s, "229 (|||40124|)\r\n");
    assert_eq!(t, Ok(Turn::OpenData(40124)));
    assert_eq!(reply(&c, &mut s, "150 ok\r\n"), Ok(Turn::ReceiveData(8192)));
    assert_eq!(c.data_done(&mut s, 8192), Ok(Turn::Reply));
    assert_eq!(reply(&c, &mut s, "226 done\r\n"), Ok(Turn::Complete));
}

#[test]
fn a_refused_epsv_falls_back_to_pasv_for_the_connection() {
    let c = client(Kind::Crr, 20_000_000, 1, None);
    let mut s = logged_on(&c);
    assert_eq!(
        reply(&c, &mut s, "500 Unknown command.\r\n"),
        Ok(Turn::Command)
    );
    assert_eq!(command(&c, &s), "PASV\r\n");
    let t = reply(
        &c,
        &mut s,
        "227 Entering Passive Mode (127,0,0,1,156,64).\r\n",
    );
    assert_eq!(t, Ok(Turn::OpenData(156 * 256 + 64)));
    assert_eq!(command(&c, &s), "STOR 20000000\r\n");
    assert_eq!(
        reply(&c, &mut s, "150 Ok to send data.\r\n"),
        Ok(Turn::SendData(20_000_000))
    );
    assert_eq!(c.data_done(&mut s, 20_000_000), Ok(Turn::Reply));
    // CRR logs off after the transfer.
    assert_eq!(
        reply(&c, &mut s, "226 Transfer complete.\r\n"),
        Ok(Turn::Command)
    );
    assert_eq!(command(&c, &s), "QUIT\r\n");
    assert_eq!(reply(&c, &mut s, "221 Goodbye.\r\n"), Ok(Turn::Complete));
    assert_eq!(command(&c, &s), "PASV\r\n");
}

#[test]
fn wrong_servers_and_refusals_are_faults_in_one_line() {
    let c = client(Kind::Str, 1, 1000, None);
    // Not an FTP server.
    let mut s = Session::default();
    c.setup_open(&mut s);
    let e = c
        .setup_received(&mut s, b"SSH-2.0-OpenSSH_9.2\r\n")
        .unwrap_err();
    assert!(
        e.0.contains("not an FTP reply") && e.0.contains("SSH-2.0"),
        "{e}"
    );
    assert_eq!(c.setup_failure(&s), "not_ftp");
    // Log-on refused.
    let mut s = Session::default();
    c.setup_open(&mut s);
    assert_eq!(c.setup_received(&mut s, b"220 hi\r\n"), Ok(Setup::Send));
    let e = c.setup_received(
        &mut s,
        b"530 This FTP server does not allow anonymous logins.\r\n",
    );
    let e = e.unwrap_err();
    assert!(e.0.contains("log-on as anonymous was answered '530"), "{e}");
    assert!(e.0.contains("anonymous_enable=YES"), "{e}");
    assert_eq!(c.setup_failure(&s), "login_refused");
    // No file of the size.
    let mut s = logged_on(&c);
    reply(&c, &mut s, "229 (|||5000|)\r\n").unwrap();
    let e = reply(&c, &mut s, "550 Failed to open file.\r\n").unwrap_err();
    assert!(
        e.0.starts_with("RETR 1000 was answered '550 Failed to open file.'"),
        "{e}"
    );
    assert!(e.0.contains("a file 1000 of 1,000 bytes"), "{e}");
    // A file of another size.
    let mut s = logged_on(&c);
    reply(&c, &mut s, "229 (|||5000|)\r\n").unwrap();
    reply(&c, &mut s, "150 ok\r\n").unwrap();
    let e = c.data_done(&mut s, 999).unwrap_err();
    assert!(e.0.contains("the server sent 999"), "{e}");
    // An EPSV answer without a port.
    let mut s = logged_on(&c);
    let e = reply(&c, &mut s, "229 Entering Extended Passive Mode\r\n").unwrap_err();
    assert!(e.0.contains("names no port"), "{e}");
}

#[test]
fn passive_answers_give_their_ports() {
    assert_eq!(
        epsv_port("Entering Extended Passive Mode (|||6446|)"),
        Some(6446)
    );
    assert_eq!(epsv_port("(!!!6446!)"), Some(6446));
    assert_eq!(epsv_port("(|||0|)"), None);
    assert_eq!(epsv_port("(||6446|)"), None);
    assert_eq!(
        pasv_port("Entering Passive Mode (127,0,0,1,25,10)."),
        Some(25 * 256 + 10)
    );
    assert_eq!(pasv_port("=127,0,0,1,25,10"), Some(6410));
    assert_eq!(pasv_port("(127,0,0,1,300,10)"), None);
    assert_eq!(pasv_port("(127,0,0,1,25)"), None);
}
