//! The `tcp` row: TCP over IPv4 or IPv6, every other hook the table's default.

use stackbench_model::Transport;

use super::ops::{ListenRequest, Listening, TransportOps};

#[derive(Debug)]
pub struct Tcp;

pub static TCP: Tcp = Tcp;

impl TransportOps for Tcp {
    fn listen(&self, req: &ListenRequest<'_>) -> Result<Listening, String> {
        super::listen::inet_listeners(self.as_row(), req, None)
    }

    fn transport(&self) -> Transport {
        Transport::Tcp
    }
    fn uring(&self) -> bool {
        true
    }

    fn as_row(&self) -> &'static dyn TransportOps {
        &TCP
    }
}
