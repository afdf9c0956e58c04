//! Amqp's row of the protocol table: apart from the module's shared
//! pieces, which its halves import, so that the row naming the halves
//! makes no import cycle.

use stackbench_model::AppProtocol;

use super::client::Client;
use super::server::Server;
use crate::app::Protocol;

/// AMQP 1.0's row of the protocol table (`crate::app::row`).
#[derive(Debug, Clone, Copy)]
pub struct Amqp;

impl Protocol for Amqp {
    const PROTOCOL: AppProtocol = AppProtocol::Amqp;
    type Client = Client;
    type Server = Server;
    /// A broker closes a connection only when its client does.
    const PLAIN_SERVER_CLOSES: bool = false;
    /// Requests are answered by applications that get them from the broker.
    const PLAIN_SERVER_IS_BROKER: bool = true;
}
