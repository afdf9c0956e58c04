//! The protocol table: which [`Protocol`] row serves a `protocol` setting
//! value. Apart from the trait (`app.rs`) as the transport table is from
//! its trait (`transport/rows.rs`), so that the rows, which implement the
//! trait, and the table, which names the rows, do not import each other.

use stackbench_model::AppProtocol;

use super::{amqp, ftp, h2, http1, tn3270, Protocol, Raw, Row, Visit};

/// Runs `visit` with the row of `protocol`: the one place a setting value
/// becomes a protocol's types (one arm per row).
#[inline]
pub fn with<V: Visit>(protocol: AppProtocol, visit: V) -> V::Out {
    match protocol {
        AppProtocol::Raw => visit.visit::<Raw>(),
        AppProtocol::Http1 => visit.visit::<http1::Http1>(),
        AppProtocol::Tn3270 => visit.visit::<tn3270::row::Tn3270>(),
        AppProtocol::Amqp => visit.visit::<amqp::row::Amqp>(),
        AppProtocol::Ftp => visit.visit::<ftp::row::Ftp>(),
        AppProtocol::H2 => visit.visit::<h2::row::H2>(),
    }
}

/// The row of `protocol`.
pub fn row(protocol: AppProtocol) -> Row {
    struct RowOf;
    impl Visit for RowOf {
        type Out = Row;
        fn visit<P: Protocol>(self) -> Row {
            Row::of::<P>()
        }
    }
    with(protocol, RowOf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{Codec, Handler};
    use stackbench_model::Transport;

    /// Every setting value of the model's table has its row, serving it
    /// under its own name, and both halves of a row agree with it (and the
    /// model) on whether the protocol is framed.
    #[test]
    fn every_protocol_has_its_row() {
        struct Halves;
        impl Visit for Halves {
            type Out = (AppProtocol, bool, bool, bool);
            fn visit<P: Protocol>(self) -> Self::Out {
                let codec = <P::Client as Codec>::PROTOCOL;
                assert_eq!(codec, P::PROTOCOL, "{}", P::PROTOCOL.name());
                let (client, server) = (P::Client::FRAMED, P::Server::FRAMED);
                (
                    P::PROTOCOL,
                    client,
                    server,
                    P::Client::SETUP || P::Server::SETUP,
                )
            }
        }
        for &p in AppProtocol::ALL {
            let (protocol, client, server, setup) = with(p, Halves);
            assert_eq!(protocol, p);
            assert_eq!(row(p).name(), p.name());
            assert_eq!((client, server), (p.framed(), p.framed()), "{}", p.name());
            assert_eq!(row(p).framed, p.framed());
            assert_eq!(row(p).setup, setup);
        }
    }

    /// Only raw payloads are unframed; TN3270 opens with a dialogue and
    /// HTTP does not; every protocol but FTP (clear TCP only: its data
    /// connections) runs over every transport, and a row that does not
    /// refuses in one line; only FTP opens data connections.
    #[test]
    fn rows_differ_where_their_protocols_do() {
        let unframed: Vec<_> = AppProtocol::ALL
            .iter()
            .filter(|p| !row(**p).framed)
            .collect();
        assert_eq!(unframed, [&AppProtocol::Raw]);
        assert!(row(AppProtocol::Tn3270).setup && !row(AppProtocol::Http1).setup);
        for &p in AppProtocol::ALL {
            for &t in Transport::ALL {
                let ftp = p == AppProtocol::Ftp && t != Transport::Tcp;
                assert_eq!(row(p).refuses_transport(t).is_some(), ftp, "{p:?} {t:?}");
            }
            assert_eq!(row(p).data, p == AppProtocol::Ftp);
        }
        assert_eq!(
            row(AppProtocol::Ftp)
                .refuses_transport(Transport::Tls)
                .as_deref(),
            Some("protocol ftp does not run over transport tls (use tcp)")
        );
        let narrow = Row {
            transports: &[Transport::Tcp, Transport::Tls],
            ..row(AppProtocol::Http1)
        };
        assert_eq!(
            narrow.refuses_transport(Transport::Unix).as_deref(),
            Some("protocol http1 does not run over transport unix (use tcp, tls)")
        );
    }
}
