//! The `tcp` row: TCP over IPv4 or IPv6, every hook the table's default.

use stackbench_model::Transport;

use super::ops::TransportOps;

#[derive(Debug)]
pub struct Tcp;

pub static TCP: Tcp = Tcp;

impl TransportOps for Tcp {
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
