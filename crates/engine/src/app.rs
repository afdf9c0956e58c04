//! Application protocols: what the bytes of a transaction are, above the
//! byte stream and independent of the I/O backend and the transport. (Not to
//! be confused with [`crate::control`], the control protocol between driver
//! and responder.) A protocol is two halves:
//!
//! - a [`Codec`] on the driver side: how long the next request is, and when
//!   the response to it is complete;
//! - a [`Handler`] on the responder side: when a request is complete, and how
//!   long the answer to it is.
//!
//! The state machines ([`crate::driver`]'s per-connection machine, the
//! responder's `responder::machine`) ask these halves and nothing else about
//! sizes and contents, so HTTP, messaging or TN3270 become a codec plus a
//! handler. [`Raw`] — sized payloads of zero bytes, the notation's
//! `RR10(4kB/4kB)` — is the first implementation; its sizes are known before
//! a byte moves, so the backends count received bytes without reading them
//! (io_uring receives into one shared sink) and send a zero buffer. A
//! protocol whose ends are found in the bytes sets `FRAMED`: the backends
//! then hand it each received chunk ([`Codec::response_left`],
//! [`Handler::request_left`]) and let it write its messages' bytes
//! ([`Codec::fill_request`], [`Handler::fill_response`]). [`http1`] is the
//! first framed one, [`tn3270`] the second, [`amqp`] the third (whose
//! requests also differ in length per connection: [`Codec::request_len`]).
//!
//! Each half has a per-connection `State` (what a parse carried over from
//! one chunk to the next); `Raw`'s is `()`, so its connections do not grow.
//! The halves are plain types resolved at compile time (the driver's
//! machine is generic over its codec): no call through a pointer per event.
//! A malformed message is a [`Fault`], never a panic: the driver ends the
//! client and makes the run incomplete with the fault's line; the responder
//! closes the connection and counts an error. A well-formed answer that
//! says the request failed (an HTTP 404) is no fault: a codec with
//! `STATUS` reports each response's status ([`Codec::status`]), which the
//! driver counts per code and as an error, and the connection goes on.
//!
//! Connection setup. Some protocols exchange messages when a connection
//! opens, before its first transaction: TN3270's Telnet negotiation (the
//! server speaks first), an SMTP greeting, an MQ channel's open (the client
//! speaks first). A protocol with such an opening sets `SETUP` and answers
//! [`Setup`] steps: `setup_open` when the connection is up, `setup_received`
//! for each chunk the peer sent during it, `setup_bytes`/`fill_setup` for
//! what it sends. Both machines run the dialogue as phases of their own
//! before the first request; a protocol without one (`SETUP` false, the
//! default: [`Raw`], [`http1`]) never enters them, and the constant branch
//! compiles away. Setup bytes are counted with the others (they moved); only
//! records of the workload's sizes count as transactions. On the driver a
//! CRR transaction starts at its connect, so a CRR latency includes the
//! setup (a user who logs on, transacts once and logs off); an RR client
//! finishes its setup before the start barrier, so RR latencies never do.
//!
//! The protocol table. Each protocol is one row ([`Protocol`]: its setting
//! value, its two halves and the transports it runs over; [`Row`]: what
//! follows from them at run time — framed, setup), and [`with`] (in
//! `rows.rs`) is the one place a run's `protocol` setting becomes a type:
//! the driver runs its worker loop compiled for the row's `Client`, the
//! responder builds an accepted connection's entry for the row's `Server`,
//! each through a [`Visit`] of its own. Like the transport table
//! (`crate::transport::row`), but a row is a type rather than a value:
//! what it selects are monomorphised loops, and a visitor reaches them
//! without the table naming the driver or the responder (which look the
//! table up: the module graph stays a DAG). Adding a protocol: a variant of
//! [`AppProtocol`] (the model's `app_protocols!` table: spelling, allowed
//! values, plain targets), a module of its own here with its halves and its
//! [`Protocol`] row, and one arm in [`with`].
//!
//! Data connections. A protocol that moves each transaction's payload on a
//! connection of its own (FTP: a passive data connection per transfer)
//! sets `DATA` and asks the driver for it: after each complete response on
//! the connection the client opened (the control connection) the machine
//! asks [`Codec::turn`] what the transaction does next ([`Turn`]: send
//! another command, open a data connection to a port of the control
//! connection's peer, receive or send the payload on it, read another
//! reply, or complete), and when the data connection ends,
//! [`Codec::data_done`]. The data connection's bytes are counted as the
//! transaction's (rx/tx bytes) and belong to the same per-connection
//! machine: one state per client, the data socket beside the control one
//! in the backend. Only the epoll backend opens data connections; io_uring
//! takes no framed protocol (epoll runs it, named in the warnings) and
//! direct waiting takes no client with two sockets.

pub mod amqp;
pub mod ftp;
pub mod h2;
pub mod http1;
mod rows;
pub mod tn3270;

pub use rows::{row, with};

use stackbench_model::settings::Tn3270Options;
use stackbench_model::{AmqpParams, AppProtocol, CrrClose, H2Params, Kind, Transport};

/// A message the protocol cannot accept, in one line naming what was wrong
/// and what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault(pub String);

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `53211` as `53,211`: counts in faults' and causes' lines.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What one side does next while its connection is being set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// Read what the peer sends next.
    Read,
    /// Send the setup bytes the state holds (`setup_bytes`), then read on.
    Send,
    /// Send the setup bytes the state holds; setup is over once they are out.
    SendLast,
    /// Setup is over: the first transaction may start.
    Done,
}

/// What a transaction of a protocol with data connections (`Codec::DATA`)
/// does next, after a complete response on the control connection or the
/// data connection's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// The transaction is complete.
    Complete,
    /// Send the next command (`Codec::request_len` and `fill_request` say
    /// it), then read its reply: the same transaction.
    Command,
    /// Open a data connection to this port of the control connection's
    /// peer, then send the next command.
    OpenData(u16),
    /// Receive the payload on the data connection until it ends: the
    /// codec says how many bytes were due ([`Codec::data_bytes`]); then
    /// [`Codec::data_done`].
    ReceiveData(u64),
    /// Send this many payload bytes on the data connection and close it;
    /// then [`Codec::data_done`].
    SendData(u64),
    /// Read the next reply on the control connection.
    Reply,
}

/// What a class asks of its protocol: kind, notation sizes, whether the
/// server closes each CRR connection and the run's protocol settings
/// (TN3270's options, AMQP's), from which each codec builds itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassShape {
    pub kind: Kind,
    pub request_bytes: u64,
    pub response_bytes: u64,
    pub crr_close: CrrClose,
    /// A plain server's target: the host its requests name, and the path
    /// its URL gave (`None`: stackbench's own responder).
    pub target: Option<&'static TargetHead>,
    pub tn3270: Tn3270Options,
    /// Protocol amqp's settings (the other protocols ignore them).
    pub amqp: AmqpParams,
    /// Protocol h2's windows and frame size (the other protocols ignore
    /// them).
    pub h2: H2Params,
}

/// What a connection's setup settled, for the record's session counts
/// (TN3270: the mode the session runs in, the TN3270E functions agreed as
/// bits by function code, and the device type the server confirmed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled<'a> {
    pub mode: &'static str,
    pub functions: u8,
    pub device_type: &'a str,
}

/// What a plain server's URL says about the requests: `Host`, and the path
/// every request names (`None`: the notation's own, `/N`).
#[derive(Debug, PartialEq, Eq)]
pub struct TargetHead {
    pub host: String,
    pub path: Option<String>,
}

impl TargetHead {
    /// The one copy of `(host, path)` in this process: interned so that
    /// class plans stay `Copy` and a worker's codecs borrow nothing; one
    /// entry per distinct target a process drives (a study's few), never
    /// per run or per transaction.
    pub fn intern(host: &str, path: Option<&str>) -> &'static TargetHead {
        use std::sync::{Mutex, OnceLock};
        static HEADS: OnceLock<Mutex<Vec<&'static TargetHead>>> = OnceLock::new();
        let mut heads = HEADS
            .get_or_init(|| Mutex::new(Vec::new()))
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let wanted = TargetHead {
            host: host.to_string(),
            path: path.map(str::to_string),
        };
        if let Some(h) = heads.iter().find(|h| ***h == wanted) {
            return h;
        }
        let head: &'static TargetHead = Box::leak(Box::new(wanted));
        heads.push(head);
        head
    }
}

impl ClassShape {
    /// Whether the server ends each connection after its response (CRR with
    /// `crr_close server`): HTTP says so with `Connection: close`.
    pub fn server_closes(&self) -> bool {
        self.kind == Kind::Crr && self.crr_close == CrrClose::Server
    }
}

/// The driver's half of an application protocol.
pub trait Codec: Clone {
    /// Whether where a response ends depends on its bytes (then a backend
    /// must hand them over; when false it may count them unread).
    const FRAMED: bool;
    /// The protocol this codec speaks (a backend that cannot hand over
    /// received bytes refuses a framed one before the run).
    const PROTOCOL: AppProtocol;
    /// What one connection carries from one received chunk to the next.
    type State: Default;

    /// The codec of a class.
    fn of(shape: &ClassShape) -> Self;

    /// Length of the next request, bytes.
    fn request_bytes(&self) -> u64;

    /// Writes bytes `offset..offset + out.len()` of the request into `out`
    /// (an unframed codec writes nothing: any bytes do); `state` says how
    /// (TN3270: with or without the TN3270E header, after the bytes owed).
    #[inline]
    fn fill_request(&self, _state: &Self::State, _offset: u64, _out: &mut [u8]) {}

    /// Bytes the connection owes the server, sent ahead of the next request
    /// in the same write (TN3270: answers to a TIMING-MARK or an option
    /// that arrived with a response, a definite response a record asked
    /// for); 0 for most protocols, and never asked of an unframed one.
    #[inline]
    fn owed_bytes(&self, _state: &Self::State) -> u64 {
        0
    }

    /// The request (and what was owed ahead of it) is all out.
    #[inline]
    fn request_sent(&self, _state: &mut Self::State) {}

    /// Length of the next request on a connection in `state`, bytes: the
    /// class's [`Codec::request_bytes`] after what the connection owes
    /// ([`Codec::owed_bytes`], framed protocols only), unless the protocol's
    /// requests differ per connection (AMQP's carry credit and settlements
    /// and ids of their own length). Read at the request's start and while
    /// it is sent; `state` changes only when bytes arrive, so it is the
    /// same throughout.
    #[inline]
    fn request_len(&self, state: &Self::State) -> u64 {
        let owed = if Self::FRAMED {
            self.owed_bytes(state)
        } else {
            0
        };
        self.request_bytes() + owed
    }

    /// Bytes of the response expected once the request is out (a framed
    /// protocol: what it needs before it can tell more).
    fn response_bytes(&self) -> u64;

    /// Bytes of the response still due after `n` more arrived (`chunk`,
    /// empty for an unframed codec: the backend did not read it), when
    /// `remaining` were due; 0: the response is complete (and `state` ready
    /// for the next one).
    fn response_left(
        &self,
        state: &mut Self::State,
        remaining: u64,
        n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault>;

    /// Whether responses carry a status the driver counts per code (HTTP's):
    /// after each complete response of the window it asks [`Codec::status`].
    /// False (the default): it never asks, and the branch compiles away.
    const STATUS: bool = false;

    /// The status of the response just completed (asked only when
    /// [`Codec::STATUS`], after `response_left` returned 0).
    #[inline]
    fn status(&self, _state: &Self::State) -> u16 {
        0
    }

    /// What answers a request, in the lines that explain an incomplete
    /// run ("response"; TN3270's "screen").
    const RESPONSE_NAME: &'static str = "response";

    /// What arrived of the response in progress, `remaining` still due,
    /// for the line that explains a connection the server ended, or a
    /// window that closed, mid-response: `None` before any byte of it,
    /// else what arrived ("100 of 4,000 bytes"). Asked on errors and at
    /// the window's end, never per transaction.
    fn response_seen(&self, _state: &Self::State, remaining: u64) -> Option<String> {
        let total = self.response_bytes();
        let got = total.saturating_sub(remaining);
        (got > 0).then(|| format!("{} of {} bytes", grouped(got), grouped(total)))
    }

    /// Whether the server said it closes the connection after the response
    /// just completed (HTTP's `Connection: close`): a kept-alive client
    /// then closes too and connects anew for its next request. Asked of a
    /// `FRAMED` codec only, after `response_left` returned 0.
    #[inline]
    fn server_closes(&self, _state: &Self::State) -> bool {
        false
    }

    /// Whether a connection opens with a setup dialogue (see the module
    /// doc); false: the first request goes out at once.
    const SETUP: bool = false;

    /// The connection is up: the client's first setup step.
    #[inline]
    fn setup_open(&self, _state: &mut Self::State) -> Setup {
        Setup::Done
    }

    /// A chunk the server sent during setup: the next step.
    #[inline]
    fn setup_received(&self, _state: &mut Self::State, _chunk: &[u8]) -> Result<Setup, Fault> {
        Ok(Setup::Done)
    }

    /// Length of the setup bytes to send now ([`Setup::Send`]).
    #[inline]
    fn setup_bytes(&self, _state: &Self::State) -> u64 {
        0
    }

    /// Writes bytes `offset..offset + out.len()` of the setup bytes to send.
    #[inline]
    fn fill_setup(&self, _state: &Self::State, _offset: u64, _out: &mut [u8]) {}

    /// What the setup is called, in the lines that explain an incomplete run.
    const SETUP_NAME: &'static str = "connection setup";

    /// What the server sent of the setup so far (as [`Codec::response_seen`]):
    /// `None` before any byte of it.
    fn setup_seen(&self, _state: &Self::State) -> Option<String> {
        None
    }
    /// Setup ended: what it settled, counted per class (`None`: nothing to
    /// count, the default).
    #[inline]
    fn settled<'a>(&self, _state: &'a Self::State) -> Option<Settled<'a>> {
        None
    }

    /// Setup failed with a fault: the reason it is counted under, a
    /// snake_case key (the fault's line says more).
    #[inline]
    fn setup_failure(&self, _state: &Self::State) -> &'static str {
        "fault"
    }

    /// Whether a transaction moves its payload on a data connection of its
    /// own (see the module doc); false: the branch compiles away.
    const DATA: bool = false;

    /// A response on the control connection is complete: what the
    /// transaction does next (asked only when `DATA`).
    #[inline]
    fn turn(&self, _state: &mut Self::State) -> Result<Turn, Fault> {
        Ok(Turn::Complete)
    }

    /// The payload bytes a data connection carries (asked only when `DATA`).
    #[inline]
    fn data_bytes(&self) -> u64 {
        0
    }

    /// The data connection ended having moved `moved` payload bytes (or
    /// received more than were due): what next (asked only when `DATA`).
    #[inline]
    fn data_done(&self, _state: &mut Self::State, _moved: u64) -> Result<Turn, Fault> {
        Ok(Turn::Complete)
    }

    /// Whether the class runs a script (TN3270's `tn3270_script`): its
    /// transactions are steps with names, bounded waits and think times of
    /// their own (the hooks below); false, the default: none of them is
    /// asked and the branches compile away for unframed protocols.
    #[inline]
    fn scripted(&self) -> bool {
        false
    }

    /// Scripted: the longest wait for the response to the request under
    /// way, ns; past it the step timed out ([`Codec::timed_out`]).
    #[inline]
    fn response_timeout_ns(&self, _state: &Self::State) -> Option<u64> {
        None
    }

    /// Scripted: the step whose transaction the response just completed
    /// (asked after `response_left` returned 0), by index in the script.
    #[inline]
    fn step_done(&self, _state: &Self::State) -> Option<usize> {
        None
    }

    /// Scripted: the think time the step just completed asks for before
    /// the next step's request; `None`: the class's pacing.
    #[inline]
    fn think_ns(&self, _state: &Self::State) -> Option<u64> {
        None
    }

    /// Scripted: the step under way timed out: its index, and what the
    /// screen showed instead (for the record).
    fn timed_out(&self, _state: &Self::State) -> Option<(usize, String)> {
        None
    }
}

/// The responder's half of an application protocol.
pub trait Handler: Clone {
    /// Whether where a request ends depends on its bytes.
    const FRAMED: bool;
    /// What one connection carries from one chunk to the next (kept in
    /// the responder's connection entry, which moves to a worker thread).
    type State: Default + Send;

    /// The handler of a test whose requests and answers are of these
    /// sizes, with the options of the protocols that take any (TN3270's).
    fn of(request_bytes: u64, response_bytes: u64, tn3270: &Tn3270Options) -> Self;

    /// Bytes of the next request expected (a framed protocol: what it needs
    /// before it can tell more).
    fn request_bytes(&self) -> u64;

    /// Bytes of the request still due after `n` more arrived (`chunk`, empty
    /// when not framed), when `remaining` were due; 0: it is complete.
    fn request_left(
        &self,
        state: &mut Self::State,
        remaining: u64,
        n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault>;

    /// Length of the answer to the complete request, bytes.
    fn response_bytes(&self, state: &Self::State) -> u64;

    /// Writes bytes `offset..offset + out.len()` of the answer into `out`
    /// (unframed: nothing).
    #[inline]
    fn fill_response(&self, _state: &Self::State, _offset: u64, _out: &mut [u8]) {}

    /// Whether the connection ends after this answer (HTTP's
    /// `Connection: close`).
    #[inline]
    fn closes(&self, _state: &Self::State) -> bool {
        false
    }

    /// Whether a connection opens with a setup dialogue (see the module
    /// doc); false: it waits for its first request at once.
    const SETUP: bool = false;

    /// The connection was accepted: the server's first setup step (a server
    /// that speaks first says [`Setup::Send`]).
    #[inline]
    fn setup_open(&self, _state: &mut Self::State) -> Setup {
        Setup::Done
    }

    /// A chunk the client sent during setup: the next step.
    #[inline]
    fn setup_received(&self, _state: &mut Self::State, _chunk: &[u8]) -> Result<Setup, Fault> {
        Ok(Setup::Done)
    }

    /// Length of the setup bytes to send now.
    #[inline]
    fn setup_bytes(&self, _state: &Self::State) -> u64 {
        0
    }

    /// Writes bytes `offset..offset + out.len()` of the setup bytes to send.
    #[inline]
    fn fill_setup(&self, _state: &Self::State, _offset: u64, _out: &mut [u8]) {}
}

/// Sized payloads of zero bytes: a request of `request` bytes, answered with
/// `response` bytes. Both ends are known in advance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw {
    pub request: u64,
    pub response: u64,
}

impl Codec for Raw {
    const FRAMED: bool = false;
    const PROTOCOL: AppProtocol = AppProtocol::Raw;
    type State = ();

    fn of(shape: &ClassShape) -> Raw {
        Raw {
            request: shape.request_bytes,
            response: shape.response_bytes,
        }
    }

    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request
    }

    #[inline]
    fn response_bytes(&self) -> u64 {
        self.response
    }

    #[inline]
    fn response_left(&self, _: &mut (), remaining: u64, n: u64, _: &[u8]) -> Result<u64, Fault> {
        Ok(remaining - n)
    }
}

impl Handler for Raw {
    const FRAMED: bool = false;
    type State = ();

    #[inline]
    fn of(request: u64, response: u64, _: &Tn3270Options) -> Raw {
        Raw { request, response }
    }

    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request
    }

    #[inline]
    fn request_left(&self, _: &mut (), remaining: u64, n: u64, _: &[u8]) -> Result<u64, Fault> {
        Ok(remaining - n)
    }

    #[inline]
    fn response_bytes(&self, _: &()) -> u64 {
        self.response
    }
}

/// One application protocol: its row of the protocol table. The type is
/// a marker (raw payloads are their own: [`Raw`]); what a run uses of it is
/// its two halves, through [`with`], and its [`Row`].
pub trait Protocol: 'static {
    /// The setting value this row serves (its spelling: `AppProtocol::name`).
    const PROTOCOL: AppProtocol;
    /// The driver's half: the driver's machine and worker loops are compiled
    /// for it, once per protocol.
    type Client: Codec;
    /// The responder's half: its connections' machine is compiled for it.
    type Server: Handler;
    /// The transports it runs over (a protocol of byte streams: all).
    const TRANSPORTS: &'static [Transport] = Transport::ALL;
    /// What TLS's ALPN offers for it, in preference order (`http/1.1`,
    /// `h2`); empty: no ALPN (raw payloads, and protocols ALPN has no
    /// name for).
    const ALPN: &'static [&'static str] = &[];
    /// How a plain server of it is checked before a run, on one connection
    /// of its own ([`Probe`]); `None`: only that it accepts a connection.
    const PROBE: Option<Probe> = None;
    /// The longest request and response it can carry (HTTP/2's flow
    /// control bounds them: see `h2`'s module doc); larger notation sizes
    /// are refused before the run.
    const MAX_REQUEST_BYTES: u64 = u64::MAX;
    const MAX_RESPONSE_BYTES: u64 = u64::MAX;
    /// The longest request and response under the run's `h2_*` settings
    /// (HTTP/2's windows are settings); the constants above by default.
    fn max_bytes(_h2: &H2Params) -> (u64, u64) {
        (Self::MAX_REQUEST_BYTES, Self::MAX_RESPONSE_BYTES)
    }
    /// Whether a plain server of the protocol (its scheme's target) ends a
    /// connection after a CRR reply when asked to (HTTP/1.1's `Connection:
    /// close`); a broker does not, and no HTTP/2 request can ask it, so CRR
    /// against them needs `crr_close client` or `abort`.
    const PLAIN_SERVER_CLOSES: bool = true;
    /// Whether a plain server of the protocol is a broker: the answers come
    /// from applications that are its clients too, measured as a third side
    /// (the processes connected to it other than the driver).
    const PLAIN_SERVER_IS_BROKER: bool = false;
    /// Checks a plain server of the protocol before anything runs (one
    /// line, naming what was seen, when it does not speak the protocol or
    /// refuses the login); `Ok` when there is nothing to check.
    fn probe_plain(_target: &PlainProbe<'_>) -> Result<(), String> {
        Ok(())
    }
}

/// What a row's probe of a plain server gets: its address, its target as
/// written, and the run's protocol settings.
pub struct PlainProbe<'a> {
    pub addr: std::net::SocketAddr,
    pub named: &'a str,
    pub amqp: &'a AmqpParams,
}

/// A connection a probe talks over (clear or TLS).
pub trait Wire: std::io::Read + std::io::Write {}
impl<T: std::io::Read + std::io::Write> Wire for T {}

/// What a probe of a plain server is told: the `HOST:PORT` its requests
/// name, the path to ask for (`/` when the URL gave none), whether the
/// connection is TLS and what its ALPN settled, and how long a read waits.
#[derive(Debug, Clone, Copy)]
pub struct ProbeTarget<'a> {
    pub authority: &'a str,
    pub path: &'a str,
    pub tls: bool,
    /// The protocol the server selected by ALPN (`None`: none).
    pub alpn: Option<&'a str>,
    pub timeout_s: u64,
}

/// A row's check of a plain server before a run: one request on a fresh
/// connection, whose answer must begin as the protocol does; `Err`: what
/// was seen instead ("its answer to GET / begins …"), for the line that
/// refuses the target. Any status is an answer.
pub type Probe = fn(&mut dyn Wire, &ProbeTarget<'_>) -> Result<(), String>;

/// Raw payloads: the row whose connections are counted unread and
/// answered from zeros (the responder keeps them unboxed, io_uring serves
/// them).
impl Protocol for Raw {
    const PROTOCOL: AppProtocol = AppProtocol::Raw;
    type Client = Raw;
    type Server = Raw;
}

/// What a row says at run time, for the checks that look at a setting
/// value rather than run a type: which backends a protocol runs on (a
/// framed one only on those that hand received bytes over: not io_uring,
/// whose refusal, and `io auto`'s choice of epoll, `crate::iomode` takes
/// from here), and over which transports.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub protocol: AppProtocol,
    /// Its ends are read from its bytes (both halves' `FRAMED`).
    pub framed: bool,
    /// Its connections open with a setup dialogue (either half's `SETUP`).
    pub setup: bool,
    /// Its transactions open data connections of their own (`Codec::DATA`).
    pub data: bool,
    pub transports: &'static [Transport],
    /// What the driver's half calls an answer and its setup, in the lines
    /// that explain an incomplete run (`Codec::RESPONSE_NAME`, `SETUP_NAME`).
    pub response_name: &'static str,
    pub setup_name: &'static str,
    /// What ALPN offers for it over TLS ([`Protocol::ALPN`]).
    pub alpn: &'static [&'static str],
    /// Its check of a plain server ([`Protocol::PROBE`]).
    pub probe: Option<Probe>,
    /// The longest request and response it carries, bytes.
    pub max_bytes: fn(&H2Params) -> (u64, u64),
    /// [`Protocol::PLAIN_SERVER_CLOSES`], [`Protocol::PLAIN_SERVER_IS_BROKER`].
    pub plain_server_closes: bool,
    pub plain_server_is_broker: bool,
    /// [`Protocol::probe_plain`].
    pub probe_plain: fn(&PlainProbe<'_>) -> Result<(), String>,
}

/// Rows are equal when what they say is (the probe is a function of the
/// protocol, and function pointers do not compare reliably).
impl PartialEq for Row {
    fn eq(&self, other: &Row) -> bool {
        (
            self.protocol,
            self.framed,
            self.setup,
            self.transports,
            self.response_name,
            self.setup_name,
            self.plain_server_closes,
            self.plain_server_is_broker,
        ) == (
            other.protocol,
            other.framed,
            other.setup,
            other.transports,
            other.response_name,
            other.setup_name,
            other.plain_server_closes,
            other.plain_server_is_broker,
        )
    }
}

impl Eq for Row {}

impl Row {
    /// The row of protocol `P`.
    pub const fn of<P: Protocol>() -> Row {
        Row {
            protocol: P::PROTOCOL,
            framed: P::Client::FRAMED || P::Server::FRAMED,
            setup: P::Client::SETUP || P::Server::SETUP,
            data: P::Client::DATA,
            transports: P::TRANSPORTS,
            response_name: P::Client::RESPONSE_NAME,
            setup_name: P::Client::SETUP_NAME,
            alpn: P::ALPN,
            probe: P::PROBE,
            max_bytes: P::max_bytes,
            plain_server_closes: P::PLAIN_SERVER_CLOSES,
            plain_server_is_broker: P::PLAIN_SERVER_IS_BROKER,
            probe_plain: P::probe_plain,
        }
    }

    /// Why a CRR class against a plain server of this protocol cannot run
    /// with `crr_close server` (`None`: it can).
    pub fn refuses_crr_close_server(&self) -> Option<String> {
        (!self.plain_server_closes).then(|| {
            format!(
                "protocol {} cannot ask the server to close: a plain {} server does not close a \
                 connection after a reply, so CRR with crr_close server would wait forever: add \
                 --crr-close client or abort",
                self.name(),
                self.name()
            )
        })
    }

    /// Its setting value.
    pub fn name(&self) -> &'static str {
        self.protocol.name()
    }

    /// Why it cannot carry a request of `request` bytes answered by
    /// `response` (the notation's `class`) under the run's `h2_*`
    /// settings, in one line (`None`: it can).
    pub fn refuses_sizes(
        &self,
        class: &str,
        request: u64,
        response: u64,
        h2: &H2Params,
    ) -> Option<String> {
        let (max_req, max_resp) = (self.max_bytes)(h2);
        let (what, size, max) = if request > max_req {
            ("request", request, max_req)
        } else if response > max_resp {
            ("response", response, max_resp)
        } else {
            return None;
        };
        let or = if what == "response" && self.protocol == AppProtocol::H2 {
            " or larger --h2-window and --h2-connection-window (at most 2147483647)"
        } else {
            ""
        };
        Some(format!(
            "{class}: protocol {} carries a {what} of at most {} bytes (its flow-control \
             window), not {}: give a smaller {what} size{or}",
            self.name(),
            grouped(max),
            grouped(size)
        ))
    }

    /// Why it cannot run over `transport`, in one line (`None`: it can).
    pub fn refuses_transport(&self, transport: Transport) -> Option<String> {
        (!self.transports.contains(&transport)).then(|| {
            let names: Vec<&str> = self.transports.iter().map(|t| t.name()).collect();
            format!(
                "protocol {} does not run over transport {} (use {})",
                self.name(),
                transport.name(),
                names.join(", ")
            )
        })
    }
}

/// What one side does with a protocol's types: [`with`] calls `visit` with
/// the row of a setting value, so the code inside is compiled once per
/// protocol and runs with no call through a pointer per event.
pub trait Visit {
    type Out;
    fn visit<P: Protocol>(self) -> Self::Out;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_ends_where_its_sizes_say() {
        let raw = Raw {
            request: 100,
            response: 4096,
        };
        assert_eq!(Codec::request_bytes(&raw), 100);
        assert_eq!(Codec::response_bytes(&raw), 4096);
        assert_eq!(raw.response_left(&mut (), 4096, 4000, &[]), Ok(96));
        assert_eq!(raw.response_left(&mut (), 96, 96, &[]), Ok(0));
        assert_eq!(Handler::request_bytes(&raw), 100);
        assert_eq!(raw.request_left(&mut (), 100, 60, &[]), Ok(40));
        assert_eq!(raw.request_left(&mut (), 40, 40, &[]), Ok(0));
        assert_eq!(Handler::response_bytes(&raw, &()), 4096);
        assert!(!raw.closes(&()));
    }
}
