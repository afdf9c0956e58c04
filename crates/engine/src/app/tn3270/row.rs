//! Tn3270's row of the protocol table: apart from the module's shared
//! pieces, which its halves import, so that the row naming the halves
//! makes no import cycle.

use stackbench_model::AppProtocol;

use super::client::Client;
use super::server::Server;
use crate::app::Protocol;

/// TN3270's row of the protocol table (`crate::app::row`).
#[derive(Debug, Clone, Copy)]
pub struct Tn3270;

impl Protocol for Tn3270 {
    const PROTOCOL: AppProtocol = AppProtocol::Tn3270;
    type Client = Client;
    type Server = Server;
}
