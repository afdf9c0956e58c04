//! FTP's row of the protocol table, and its responder half.
//!
//! stackbench's responder does not speak FTP yet: answering a transfer
//! needs a passive listener per session, which the responder's machine
//! does not hold, so a run of protocol ftp needs an FTP server as its
//! target (`--target ftp://HOST:PORT`), and resolving a run without one
//! refuses it in one line. [`Unserved`] is the half the table needs; it
//! refuses any request as a fault, should one reach it.

use stackbench_model::settings::Tn3270Options;
use stackbench_model::{AppProtocol, Transport};

use super::Client;
use crate::app::{Fault, Handler, Protocol};

/// FTP's row of the protocol table (`crate::app::row`).
#[derive(Debug, Clone, Copy)]
pub struct Ftp;

impl Protocol for Ftp {
    const PROTOCOL: AppProtocol = AppProtocol::Ftp;
    type Client = Client;
    type Server = Unserved;
    /// Clear-text TCP: the data connection is a plain TCP connection to
    /// the control connection's peer (FTPS and other transports are not
    /// built).
    const TRANSPORTS: &'static [Transport] = &[Transport::Tcp];
}

/// The responder's half: FTP is not served by stackbench's responder.
#[derive(Debug, Clone, Copy)]
pub struct Unserved;

impl Handler for Unserved {
    const FRAMED: bool = true;
    type State = ();

    fn of(_: u64, _: u64, _: &Tn3270Options) -> Unserved {
        Unserved
    }

    fn request_bytes(&self) -> u64 {
        1
    }

    fn request_left(&self, _: &mut (), _: u64, _: u64, _: &[u8]) -> Result<u64, Fault> {
        Err(Fault(
            "stackbench's responder does not speak FTP: give --target ftp://HOST:PORT".into(),
        ))
    }

    fn response_bytes(&self, _: &()) -> u64 {
        0
    }
}
