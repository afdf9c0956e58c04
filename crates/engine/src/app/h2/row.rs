//! HTTP/2's row of the protocol table: apart from the module's shared
//! pieces, which its halves import, so that the row naming the halves
//! makes no import cycle.

use stackbench_model::{AppProtocol, H2Params};

use super::client::Client;
use super::probe::probe;
use super::server::Server;
use super::INITIAL_WINDOW;
use crate::app::{Probe, Protocol};

/// HTTP/2's row of the protocol table (`crate::app::row`).
#[derive(Debug, Clone, Copy)]
pub struct H2;

impl Protocol for H2 {
    const PROTOCOL: AppProtocol = AppProtocol::H2;
    type Client = Client;
    type Server = Server;
    const ALPN: &'static [&'static str] = &["h2"];
    const PROBE: Option<Probe> = Some(probe);
    /// A request's DATA go out within the RFC's initial window (see the
    /// module doc, "Flow control").
    const MAX_REQUEST_BYTES: u64 = INITIAL_WINDOW;
    /// A response within the windows the client announces (`h2_window`,
    /// `h2_connection_window`).
    fn max_bytes(h2: &H2Params) -> (u64, u64) {
        (Self::MAX_REQUEST_BYTES, h2.max_response_bytes())
    }
    /// A request cannot ask an HTTP/2 server to close its connection.
    const PLAIN_SERVER_CLOSES: bool = false;
}
