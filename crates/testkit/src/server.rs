//! Fake servers for tests that need something on the other end of a port
//! that is not stackbench: a free loopback port, and a listener whose every
//! connection is handed to the test's own handler. One implementation, so a
//! test says only what its server does with a connection.

use std::net::{TcpListener, TcpStream};
use std::thread;

/// A loopback port nothing listens on (a listener's, closed): for a
/// process the test starts that must bind it, or a target that refuses.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("an ephemeral loopback port")
        .port()
}

/// A server on a free loopback port for the rest of the test process:
/// connection `i` (counting from 0) is handed to `serve(i, conn)` on a
/// thread of its own. After `accepts` connections, when given, nothing
/// listens on the port any more (a server that goes away).
pub fn serve_loopback<F>(accepts: Option<usize>, serve: F) -> u16
where
    F: Fn(usize, TcpStream) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
    let port = listener.local_addr().expect("its address").port();
    let serve = std::sync::Arc::new(serve);
    thread::spawn(move || {
        let limit = accepts.unwrap_or(usize::MAX);
        for (i, conn) in listener.incoming().take(limit).enumerate() {
            let Ok(conn) = conn else { continue };
            let serve = serve.clone();
            thread::spawn(move || serve(i, conn));
        }
        // `listener` is dropped here: the port is closed.
    });
    port
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn each_connection_reaches_the_handler_with_its_index_and_the_port_closes_after_the_limit() {
        let port = serve_loopback(Some(2), |i, mut conn| {
            let _ = conn.write_all(format!("{i}\n").as_bytes());
        });
        for want in ["0\n", "1\n"] {
            let mut got = String::new();
            TcpStream::connect(("127.0.0.1", port))
                .unwrap()
                .read_to_string(&mut got)
                .unwrap();
            assert_eq!(got, want);
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while TcpStream::connect(("127.0.0.1", port)).is_ok() {
            assert!(std::time::Instant::now() < deadline, "still listening");
            thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(TcpStream::connect(("127.0.0.1", free_port())).is_err());
    }
}
