//! The settings of protocol amqp (AMQP 1.0, the engine's `app::amqp`): what
//! a transaction does with the broker's queues, whether its messages are
//! persistent, how much the client prefetches, what a body holds and how
//! the queues are named. [`AmqpParams`] is what the driver's codec is built
//! from (the responder learns everything it needs from the messages).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::link::named_enum;
use super::value::SettingValue;

named_enum! {
    /// What one transaction of protocol amqp is (IBM's mq-cph test classes).
    AmqpPattern, "PATTERN" {
        /// Requester/Responder: put a y-byte request on the request queue
        /// and wait for the z-byte reply on this client's reply queue,
        /// matched by correlation id.
        RequestReply = "request-reply",
        /// PutGet: put a y-byte message on a queue and get it back from the
        /// same queue (the reply is the message: z is taken as y).
        PutGet = "put-get",
    }
}

named_enum! {
    /// What a message body holds (so that compression has something to work on).
    AmqpBody, "BODY" {
        /// Zero bytes.
        Zeros = "zeros",
        /// Repeated ASCII text.
        Text = "text",
        /// Pseudo-random bytes (incompressible).
        Random = "random",
    }
}

named_enum! {
    /// Compression of message bodies (IBM MQ's channel COMPMSG ZLIBFAST and
    /// ZLIBHIGH): zlib (RFC 1950) at level 1 or 9, marked by the message's
    /// `content-encoding` property `deflate`.
    AmqpCompress, "COMPRESS" {
        /// Bodies as they are.
        None = "none",
        /// zlib level 1 (MQ's ZLIBFAST).
        ZlibFast = "zlib-fast",
        /// zlib level 9 (MQ's ZLIBHIGH).
        ZlibHigh = "zlib-high",
    }
}

impl AmqpCompress {
    /// The zlib level (none: no compression).
    pub fn zlib_level(self) -> Option<u32> {
        match self {
            AmqpCompress::None => None,
            AmqpCompress::ZlibFast => Some(1),
            AmqpCompress::ZlibHigh => Some(9),
        }
    }
}

// `named_enum!` declares the enum and takes no `#[default]`.
#[allow(clippy::derivable_impls)]
impl Default for AmqpCompress {
    fn default() -> Self {
        AmqpCompress::None
    }
}

named_enum! {
    /// Whether each client has request queues of its own.
    AmqpQueues, "QUEUES" {
        /// Each connection its own request queue (`QUEUE.request.ID`).
        PerClient = "per-client",
        /// One request queue for every client (`QUEUE.request`); replies
        /// still go to each connection's own reply queue.
        Shared = "shared",
    }
}

// `named_enum!` declares the enum and takes no `#[default]`.
#[allow(clippy::derivable_impls)]
impl Default for AmqpPattern {
    fn default() -> Self {
        AmqpPattern::RequestReply
    }
}

// `named_enum!` declares the enum and takes no `#[default]`.
#[allow(clippy::derivable_impls)]
impl Default for AmqpBody {
    fn default() -> Self {
        AmqpBody::Zeros
    }
}

// `named_enum!` declares the enum and takes no `#[default]`.
#[allow(clippy::derivable_impls)]
impl Default for AmqpQueues {
    fn default() -> Self {
        AmqpQueues::Shared
    }
}

/// The prefix of every queue name a run uses (an AMQP address: letters,
/// digits and `. _ - / :`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QueueName(pub String);

impl Default for QueueName {
    fn default() -> Self {
        QueueName("stackbench".to_string())
    }
}

/// Longest queue-name prefix accepted: room for the suffixes within the
/// 255 bytes a short AMQP string (and most brokers' queue names) holds.
const QUEUE_NAME_MAX: usize = 200;

impl SettingValue for QueueName {
    const VALUE_NAME: &'static str = "NAME";
    fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.is_empty() || t.len() > QUEUE_NAME_MAX {
            return Err(format!(
                "a queue name prefix of 1 to {QUEUE_NAME_MAX} characters, e.g. stackbench"
            ));
        }
        if let Some(c) = t
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || "._-/:".contains(*c)))
        {
            return Err(format!(
                "'{c}' in a queue name: use letters, digits and . _ - / :"
            ));
        }
        Ok(QueueName(t.to_string()))
    }
    fn text(&self) -> String {
        self.0.clone()
    }
}

/// What a run's AMQP clients do: resolved from the `amqp_*` settings and
/// the target (its credentials), the same for every class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AmqpParams {
    pub pattern: AmqpPattern,
    /// Durable messages, sent unsettled: a put counts once the broker's
    /// disposition `accepted` arrived; false: sent pre-settled.
    pub persistent: bool,
    /// Link credit the client grants on its receiving link (its prefetch),
    /// renewed when half of it is used.
    pub credit: u32,
    pub body: AmqpBody,
    /// Compression of request bodies (the embedded broker and the
    /// responder application answer in kind). Absent in a record of an
    /// earlier release: none.
    #[serde(default)]
    pub compress: AmqpCompress,
    pub queues: AmqpQueues,
    /// Prefix of the queue names.
    pub queue: String,
    /// SASL PLAIN credentials (from an `amqp://USER:PASSWORD@HOST:PORT`
    /// target); `None`: SASL ANONYMOUS.
    pub user: Option<String>,
    pub password: Option<String>,
}

/// The `amqp_credit` default: enough prefetch that renewing it (a flow
/// frame every half of it) costs little per message.
pub const DEFAULT_CREDIT: u32 = 100;

impl Default for AmqpParams {
    fn default() -> Self {
        AmqpParams {
            pattern: AmqpPattern::RequestReply,
            persistent: false,
            credit: DEFAULT_CREDIT,
            body: AmqpBody::Zeros,
            compress: AmqpCompress::None,
            queues: AmqpQueues::Shared,
            queue: QueueName::default().0,
            user: None,
            password: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_ones_say_what_to_use() {
        for p in AmqpPattern::ALL {
            assert_eq!(AmqpPattern::parse(p.name()), Ok(*p));
        }
        assert_eq!(
            AmqpPattern::parse("rpc").unwrap_err(),
            "unknown pattern 'rpc': use request-reply, put-get"
        );
        assert_eq!(AmqpBody::parse("text"), Ok(AmqpBody::Text));
        assert_eq!(AmqpQueues::parse(" shared "), Ok(AmqpQueues::Shared));
        assert_eq!(QueueName::parse("a.b-c/d:e_f").unwrap().0, "a.b-c/d:e_f");
        assert!(QueueName::parse("a b")
            .unwrap_err()
            .contains("' ' in a queue name"));
        assert!(QueueName::parse(&"q".repeat(201)).is_err());
    }
}
