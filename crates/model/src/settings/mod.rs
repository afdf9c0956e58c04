//! Run settings, each defined once (fio's option table; ripgrep's raw args →
//! resolved spec): its name, type (hence grammar and unit), default, range or
//! allowed values, and help. Everything else is derived from the table below:
//! the `run` flags (`--name-with-dashes`), the study-file keys (the name), the
//! stored `settings` object of a result (the JSON name, unit in it), the
//! printed effective settings, and the sweep dimensions.
//!
//! Adding a setting is one entry in [`run_settings!`]'s invocation plus its use
//! in the engine. A bad value gets the same message from a flag, a study key or
//! a sweep, because all three go through [`RunSettings::set`].

mod agents;
mod amqp;
mod app;
mod guest;
mod h2;
mod link;
mod priority;
pub mod reference;
mod sched;
mod socket;
mod spin;
mod tls;
mod tn3270;
mod value;

pub use crate::pacing::{Arrivals, PerSecond, ThinkTime};
pub use agents::Launcher;
pub use amqp::{AmqpBody, AmqpCompress, AmqpParams, AmqpPattern, AmqpQueues, QueueName};
pub use app::{AppProtocol, PlainTarget};
pub use guest::{GuestAccel, KernelSpec};
pub use h2::H2Params;
pub use link::{BitRate, IpsecAlgorithm, IpsecMode, LinkOffloads, LinkQdisc, Pct};
pub use priority::{
    priority_class, priority_tos, ClassPriorities, MAX_LEVEL as MAX_PRIORITY_LEVEL,
};
pub use sched::{GenSched, SLICE_MAX as GEN_SCHED_SLICE_MAX, SLICE_MIN as GEN_SCHED_SLICE_MIN};
pub use socket::{CrrClose, IoMode, SocketOptions, Transport};
pub use spin::Spin;
pub use tls::{
    CertType, CipherSuite, ResumeRatio, TlsGroups, TlsMode, TlsParams, TlsVersion, CIPHER_SUITES,
};
pub use tn3270::{
    LuName, ResponderApp, ResponderTn3270e, Tn3270Options, Tn3270e, LU_NAME_MAX, TN3270_MODELS,
};
pub use value::{
    Bytes, Confidence, CpuList, IterationBounds, PidList, Secs, SettingValue, Text, PID_MAX,
};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A setting value that could not be used: `message` says what is wrong and
/// the fix; callers prefix where the value came from (`--flag`, file:line).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct SettingError {
    /// The setting's name (study-file spelling).
    pub name: String,
    /// The text given.
    pub value: String,
    pub message: String,
}

/// One row of the settings table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingDef {
    /// Study-file key and sweep dimension; the flag is `--` + name with `-`.
    pub name: &'static str,
    /// Key in the stored `settings` object (unit in the name).
    pub json: &'static str,
    /// One-line help, with the default when it is resolved at run time.
    pub help: &'static str,
    /// Placeholder in `--help`.
    pub value_name: &'static str,
    /// A switch (`--flag` alone = true).
    pub switch: bool,
    /// Allowed spellings of a closed set (empty: open).
    pub allowed: &'static [&'static str],
    /// Inclusive range in the setting's own spelling, e.g. `("1", "1024")`.
    pub range: Option<(&'static str, &'static str)>,
}

/// Short flag spellings of a few settings, `(setting, alias)`: `run --lab FILE
/// --from A --to B`. Flags only: a study key or sweep dimension is the name.
const ALIASES: &[(&str, &str)] = &[("lab_from", "from"), ("lab_to", "to")];

impl SettingDef {
    /// The command-line flag, e.g. `--client-cpus`.
    pub fn flag(&self) -> String {
        format!("--{}", self.name.replace('_', "-"))
    }

    /// The other long-flag names of this setting, without `--` (e.g. `from`).
    pub fn aliases(&self) -> impl Iterator<Item = &'static str> + '_ {
        ALIASES
            .iter()
            .filter(move |(n, _)| *n == self.name)
            .map(|(_, a)| *a)
    }
}

/// Looks a setting up by study-file name or flag spelling (`client-cpus`).
pub fn find(name: &str) -> Option<&'static SettingDef> {
    let name = name.trim().trim_start_matches("--").replace('-', "_");
    SETTINGS.iter().find(|d| d.name == name)
}

/// The names of every setting, for "allowed keys" messages.
pub fn names() -> Vec<&'static str> {
    SETTINGS.iter().map(|d| d.name).collect()
}

fn check_range<T: SettingValue>(value: &T, lo: &str, hi: &str) -> Result<(), String> {
    // `None` ("default") has no number to check.
    let Some(v) = value.ordered() else {
        return Ok(());
    };
    let bound = |b: &str| T::parse(b).ok().and_then(|x| x.ordered());
    let (Some(l), Some(h)) = (bound(lo), bound(hi)) else {
        // A table entry's bounds must parse in its own grammar (a test sets
        // every bound), never silently switch the check off.
        return Err(format!(
            "the range {lo} to {hi} does not parse: fix the settings table"
        ));
    };
    if v < l || v > h {
        return Err(format!("out of range: use {lo} to {hi}"));
    }
    Ok(())
}

/// Declares the settings table: the [`RunSettings`] struct (serde names =
/// JSON names), its defaults, [`SETTINGS`], and the by-name setter and getter.
macro_rules! run_settings {
    ($(
        $(#[doc = $doc:literal])+
        $name:ident : $ty:ty = $default:expr, json $json:literal
            $(, range $lo:literal ..= $hi:literal)? ;
    )*) => {
        /// The settings of one run, after the sources (defaults, study, variant,
        /// flags, sweep point) were applied in that order. Stored with every
        /// result as its `settings` object; `Option` values left `None` are
        /// resolved by the run (and stored resolved).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct RunSettings {
            $( $(#[doc = $doc])+ #[serde(rename = $json)] pub $name: $ty, )*
        }

        impl Default for RunSettings {
            fn default() -> Self {
                RunSettings { $( $name: $default, )* }
            }
        }

        /// Every run setting, in the order `--help` lists them.
        pub static SETTINGS: &[SettingDef] = &[$(
            SettingDef {
                name: stringify!($name),
                json: $json,
                help: concat!($($doc),+),
                value_name: <$ty as SettingValue>::VALUE_NAME,
                switch: <$ty as SettingValue>::SWITCH,
                allowed: <$ty as SettingValue>::ALLOWED,
                range: run_settings!(@range $($lo, $hi)?),
            },
        )*];

        impl RunSettings {
            /// Sets one setting from user text, checking its grammar and range.
            pub fn set(&mut self, name: &str, text: &str) -> Result<(), SettingError> {
                let err = |message: String| SettingError {
                    name: name.to_string(),
                    value: text.to_string(),
                    message,
                };
                match name {
                    $( stringify!($name) => {
                        let value = <$ty as SettingValue>::parse(text).map_err(err)?;
                        $( check_range(&value, $lo, $hi).map_err(err)?; )?
                        self.$name = value;
                        Ok(())
                    } )*
                    _ => Err(err(format!(
                        "unknown setting '{name}': use one of {}",
                        names().join(", ")
                    ))),
                }
            }

            /// The canonical text of one setting's value (`None`: no such setting).
            pub fn text_of(&self, name: &str) -> Option<String> {
                match name {
                    $( stringify!($name) => Some(SettingValue::text(&self.$name)), )*
                    _ => None,
                }
            }
        }
    };
    (@range) => { None };
    (@range $lo:literal, $hi:literal) => { Some(($lo, $hi)) };
}

// The table. Keep each help to one line; say the default when it is resolved
// at run time (an `Option` left `None`).
run_settings! {
    /// Measurement window per workload [default: 10s; 5s for the default study; none with --transactions].
    duration: Option<Secs> = None, json "duration_s", range "1ms" ..= "24h";
    /// Warm-up before each window, not counted [default: 2s; 1s for the default study; 0 with --transactions].
    warmup: Option<Secs> = None, json "warmup_s", range "0s" ..= "1h";
    /// Run exactly this many counted transactions per class.
    transactions: Option<u64> = None, json "transactions", range "1" ..= "10000000000";
    /// Driver worker threads [default: one per driver CPU].
    threads: Option<u32> = None, json "threads", range "1" ..= "1024";
    /// Worker threads of the started responder [default: one per server CPU].
    server_threads: Option<u32> = None, json "server_threads", range "1" ..= "1024";
    /// Mixes: each class on driver and responder worker threads of its own (threads / classes each, at least one), so its CPU is measured per class (thread run time); off: classes share workers and per-class CPU is the mix's.
    class_workers: bool = false, json "class_workers";
    /// CPUs for the driver [default: the first half of the available CPUs].
    client_cpus: Option<CpuList> = None, json "client_cpus";
    /// CPUs for the started responder [default: the second half of the available CPUs].
    server_cpus: Option<CpuList> = None, json "server_cpus";
    /// A running `stackbench serve` (HOST:PORT), or a plain server of the protocol: HTTP (http://HOST:PORT[/PATH], with protocol http1 or h2; https:// over TLS, verified against the system's roots or --ca), TN3270 (tn3270://HOST:PORT, with protocol tn3270) or an AMQP 1.0 broker (amqp://HOST:PORT, with protocol amqp and amqp_pattern put-get), with no responder counters; its CPU, memory and storage bytes are its processes' when it runs on this host (found by its listening socket, or server_pid) [default: start a responder process on loopback].
    target: Option<Text> = None, json "target";
    /// With a plain-server target (http://, tn3270://): the server's processes (with their descendants) to measure as its side, e.g. 1234,1240 [default: the processes holding the target's listening socket on this host, found with sock_diag; none for a server elsewhere].
    server_pid: Option<PidList> = None, json "server_pid";
    /// Start the local responder on IPv6 loopback (::1) instead of 127.0.0.1.
    ipv6: bool = false, json "ipv6";
    /// Data connections over tcp, unix (AF_UNIX, same host), mptcp (Multipath TCP), tls (TLS over TCP, OpenSSL in both sides) or smc (AF_SMC, where the kernel has it).
    transport: Transport = Transport::Tcp, json "transport";
    /// TLS protocol version, 1.2 or 1.3 (transport tls) [default: the cipher's, else 1.3].
    tls_version: Option<TlsVersion> = None, json "tls_version";
    /// TLS cipher suite: IANA hex code (3C, 9C, C027, C02F, 1301, 1302) or OpenSSL/IANA name [default: OpenSSL's choice].
    cipher: Option<CipherSuite> = None, json "cipher";
    /// TLS key-exchange groups in preference order: P-256, X25519 or P-256:X25519 [default: OpenSSL's].
    groups: Option<TlsGroups> = None, json "groups";
    /// Certificate the responder makes at start-up: rsa2048 or ecdsa-p256 (ignored with --cert/--key).
    cert_type: CertType = CertType::Rsa2048, json "cert_type";
    /// PEM certificate file for the responder (on its host; with --key) [default: made at start-up].
    cert: Option<Text> = None, json "cert";
    /// PEM private key file for the responder (on its host; with --cert).
    key: Option<Text> = None, json "key";
    /// PEM file of the CA certificates that verify an https:// target's certificate [default: the system's roots].
    ca: Option<Text> = None, json "ca";
    /// Do not verify an https:// target's certificate (a warning says so wherever the figures appear).
    insecure: bool = false, json "insecure";
    /// Where TLS runs: inline (OpenSSL in driver and responder, as System SSL in the application), ktls (OpenSSL handshake, then the kernel's record layer under the unchanged application: the AT-TLS analogue; needs CONFIG_TLS), sidecar (a TLS proxy process per side: two more loopback legs and a process, not AT-TLS).
    tls_mode: TlsMode = TlsMode::Inline, json "tls_mode";
    /// TLS: share of connections that offer the client's last session (abbreviated handshake), 0 to 1; 0: every CRR connection a full handshake.
    resume_ratio: ResumeRatio = ResumeRatio(0.0), json "resume_ratio";
    /// TLS: re-key each connection after every SIZE bytes it sends, e.g. 1MB (TLS 1.3 KeyUpdate); 0B: never.
    rekey: Bytes = Bytes(0), json "rekey_bytes", range "0B" ..= "64GB";
    /// Per-class priority level 0-6 in mix order, e.g. 6,0: DSCP CS<L> and SO_PRIORITY = htb class 1:1L of a lab link with priority_classes (needs CAP_NET_ADMIN).
    priority: Option<ClassPriorities> = None, json "priority";
    /// I/O backend of driver and responder: auto (uring for closed-loop RR with 2+ connections per driver thread, where it measured faster; else epoll), epoll, or uring (io_uring: batched sends and receives; closed-loop RR and STR over tcp and unix, the rest runs on epoll with a warning). The record stores the backend used.
    io: IoMode = IoMode::Auto, json "io";
    /// Application protocol of the data connections: raw (sized payloads), http1 (HTTP/1.1: GET /N answered by 200 with a Content-Length body; a foreign server's statuses counted per code, its chunked bodies decoded; keep-alive for RR and STR, Connection: close per CRR transaction), h2 (HTTP/2: prior knowledge on clear text, ALPN h2 over TLS; the same GET answered by a HEADERS frame and DATA frames, HPACK-coded, one stream in flight per connection; its servers are named by http:// and https:// as HTTP/1.1's), tn3270 (TN3270, RFC 1576, or TN3270E, RFC 2355, as tn3270e says: a Telnet negotiation when a connection opens, then an Enter record answered by an Erase/Write record, each ending IAC EOR), amqp (AMQP 1.0 through a broker or the embedded one) or ftp (an FTP server as --target ftp://HOST:PORT/DIR/ only: an anonymous log-on, then per transaction a passive data connection, EPSV or PASV, carrying one binary file of the notation's larger size: a RETR when the response is larger, a STOR when the request is; CRR logs on, transfers once and logs off; the sizes name the file, the control connection's commands and replies count in the bytes moved). Sizes are whole messages on the wire, headers included (TN3270: whole records, the 5-byte TN3270E header and IAC EOR included; a size below the smallest message is raised to it); h2: HEADERS and DATA frames, their 9-byte frame headers included, the connection preface and SETTINGS ahead of a connection's first request not; the record's bytes are those moved, negotiation included. A CRR latency includes the negotiation; an RR one never does. http1, h2, tn3270, amqp and ftp run on epoll (io_uring refuses them).
    protocol: AppProtocol = AppProtocol::Raw, json "protocol";
    /// Protocols http1 and h2: largest share of a class's responses whose status is not 2xx (each an http_status error; the connection goes on) before the run is incomplete, e.g. 5%; 0%: any non-2xx.
    http_error_share: Pct = Pct(1.0), json "http_error_share_pct", range "0" ..= "100";
    /// Protocol h2: the stream window the client announces (its SETTINGS_INITIAL_WINDOW_SIZE), in bytes: a response body larger than it (or than h2_connection_window) is refused before the run, as the client returns its windows between transactions; the default is h2load's (-w 30).
    h2_window: u32 = h2::DEFAULT_WINDOW, json "h2_window_bytes", range "65535" ..= "2147483647";
    /// Protocol h2: the connection window the client announces (a WINDOW_UPDATE on stream 0 from the RFC's 65,535), in bytes, returned with the next request as responses consume it; the default is h2load's (-W 30).
    h2_connection_window: u32 = h2::DEFAULT_WINDOW, json "h2_connection_window_bytes", range "65535" ..= "2147483647";
    /// Protocol h2: the largest frame payload the client accepts (its SETTINGS_MAX_FRAME_SIZE), in bytes; stackbench's responder sends DATA frames of 16,384 bytes whatever it allows, so the notation's sizes stay exact, a foreign server may send frames up to it.
    h2_max_frame: u32 = h2::DEFAULT_MAX_FRAME, json "h2_max_frame_bytes", range "16384" ..= "16777215";
    /// Protocol tn3270: TN3270E (RFC 2355, a 5-byte header on every record, device type, LU name and functions negotiated): auto (used when the server offers it, plain TN3270 when it refuses), on (a server that refuses it is a fault) or off (refused: WONT TN3270E).
    tn3270e: Tn3270e = Tn3270e::Auto, json "tn3270e";
    /// Protocol tn3270: the 3278 model the terminals are, 2 (24x80), 3 (32x80), 4 (43x80) or 5 (27x132): terminal type IBM-3278-M-E.
    tn3270_model: u32 = 2, json "tn3270_model", range "2" ..= "5";
    /// Protocol tn3270 with TN3270E: the LU name every terminal asks for (CONNECT), e.g. SBLU0001; stackbench's responder defines SBLU0000-SBLU9999 and rejects other names (INV-NAME) [default: none, the server assigns one].
    tn3270_lu: Option<LuName> = None, json "tn3270_lu";
    /// Protocol tn3270: what stackbench's responder does with TN3270E: offer (DO TN3270E first, as a z/OS TN3270 server) or refuse (plain TN3270 only: the terminals' fallback).
    responder_tn3270e: ResponderTn3270e = ResponderTn3270e::Offer, json "responder_tn3270e";
    /// Protocol tn3270: a script the terminals run (file on the driver's host; format in docs/transports.md): steps that wait for screen text, type into fields and press AID keys, each step a transaction whose latency is recorded under its name [default: none, sized Enter records].
    tn3270_script: Option<Text> = None, json "tn3270_script";
    /// Protocol tn3270: what stackbench's responder serves after the logon: echo (every input answered with a screen of the response size, as ITPECHO) or demo (a logon screen, a menu and an account screen a script can drive; see docs/transports.md).
    responder_tn3270_app: ResponderApp = ResponderApp::Echo, json "responder_tn3270_app";
    /// Protocol amqp: what a transaction does: request-reply (put a y-byte request on the request queue, get the z-byte reply from this connection's reply queue, matched by correlation id) or put-get (put a y-byte message and get it back from the same queue; z is taken as y).
    amqp_pattern: AmqpPattern = AmqpPattern::RequestReply, json "amqp_pattern";
    /// Protocol amqp: persistent messages (durable, sent unsettled: a put counts once the broker's disposition accepted it, and each reply is accepted back); off: non-persistent, sent and delivered pre-settled (best effort).
    amqp_persistent: bool = false, json "amqp_persistent";
    /// Protocol amqp: link credit (prefetch) the client grants on its receiving link, renewed with the next request once half of it is used.
    amqp_credit: u32 = amqp::DEFAULT_CREDIT, json "amqp_credit", range "1" ..= "100000";
    /// Protocol amqp: what a message body holds: zeros, text (repeated ASCII) or random (incompressible).
    amqp_body: AmqpBody = AmqpBody::Zeros, json "amqp_body";
    /// Protocol amqp: compression of message bodies, as IBM MQ's channel compression: none, zlib-fast (zlib level 1, MQ's ZLIBFAST) or zlib-high (level 9, ZLIBHIGH); marked by content-encoding deflate, and the embedded broker and responder application compress replies alike. The notation's sizes stay the uncompressed bodies; the bytes moved are what was sent.
    amqp_compress: AmqpCompress = AmqpCompress::None, json "amqp_compress";
    /// Protocol amqp: request queues shared (QUEUE.request, one for all: the queue responder applications get from) or per-client (QUEUE.request.ID, one per connection: put-get's own queue; against a broker, request-reply has no responder for them); reply queues are always per connection (QUEUE.reply.ID).
    amqp_queues: AmqpQueues = AmqpQueues::Shared, json "amqp_queues";
    /// Protocol amqp: prefix QUEUE of the queue names (letters, digits and . _ - / :).
    amqp_queue: QueueName = QueueName::default(), json "amqp_queue";
    /// Protocol amqp against a broker: file whose first line is the SASL PLAIN password of the target's user (amqp://USER@HOST:PORT); the record stores the file's path, never the password, and a password in the target is refused (it would show in ps) [default: no password].
    amqp_password_file: Option<Text> = None, json "amqp_password_file";
    /// Sides that busy-poll (epoll with zero timeout; a single-connection worker spins on its recv) instead of sleeping: lower latency; a spinning side shows ~100% CPU per worker, its CPU µs/tr include the polling.
    spin: Spin = Spin::None, json "spin";
    /// Scheduling of the driver's worker threads (every agent's too): default (the user's: SCHED_OTHER, the kernel's slice), slice:DURATION (SCHED_OTHER with an EEVDF slice of its own, 100us to 100ms, Linux 6.12+: a woken worker preempts sooner), fifo:N or rr:N (SCHED_FIFO/SCHED_RR priority 1-99: a woken worker runs at once; needs CAP_SYS_NICE or RLIMIT_RTPRIO ≥ N). A kernel that refuses it is named before the run starts.
    gen_sched: GenSched = GenSched::Default, json "gen_sched";
    /// TCP_NODELAY on every data connection (both sides) [default: on for tls, as TLS servers set it (nginx's tcp_nodelay); off otherwise]. The record stores the value applied.
    nodelay: Option<bool> = None, json "nodelay";
    /// Receive whole messages: MSG_WAITALL plus SO_RCVLOWAT = message size.
    waitall: bool = false, json "waitall";
    /// Delayed ACK off: TCP_QUICKACK re-armed after every receive.
    quickack: bool = false, json "quickack";
    /// SO_SNDBUF for data sockets, e.g. 256kB [default: kernel autotuning].
    sndbuf: Option<Bytes> = None, json "sndbuf_bytes", range "1kB" ..= "1GB";
    /// SO_RCVBUF for data sockets, e.g. 256kB [default: kernel autotuning].
    rcvbuf: Option<Bytes> = None, json "rcvbuf_bytes", range "1kB" ..= "1GB";
    /// SO_BUSY_POLL on data sockets, both sides: the receiver polls the device queue this long before sleeping.
    busy_poll: Option<Secs> = None, json "busy_poll_s", range "1us" ..= "10ms";
    /// Who closes a CRR connection first: server (TIME_WAIT on the server), client, or abort (RST).
    crr_close: CrrClose = CrrClose::Server, json "crr_close";
    /// Run each workload N times back to back: mean, standard deviation and 95% interval [default: 1].
    repeat: Option<u32> = None, json "repeat", range "1" ..= "1000";
    /// Repeat until the LEVEL% interval of rate and CPU µs/tr is at most WIDTH% of the mean, e.g. 99,5.
    confidence: Option<Confidence> = None, json "confidence";
    /// Bounds on repetitions with --confidence [default: 3,30].
    iterations: Option<IterationBounds> = None, json "iterations";
    /// Think time of every client between a response and its next request: 30s, exp:30s or uniform:10s..50s (a class's @THINK in the notation wins).
    think: Option<ThinkTime> = None, json "think", range "0s" ..= "24h";
    /// Open loop: this rate per class, spread over its connections, e.g. 50000/s; latency from the intended send time (a class's @RATE wins).
    rate: Option<PerSecond> = None, json "rate_per_s", range "1/h" ..= "100000000/s";
    /// Spacing of open-loop sends on each connection: constant or poisson.
    arrivals: Arrivals = Arrivals::Constant, json "arrivals";
    /// Open connections at this rate, e.g. 20000/s; the window starts when all are connected [default: all at once].
    ramp: Option<PerSecond> = None, json "ramp_conns_per_s", range "1/s" ..= "10000000/s";
    /// Lab file (TOML, see `stackbench lab`): drive from host --lab-from to a responder in host --lab-to over the lab's link (needs root).
    lab: Option<Text> = None, json "lab";
    /// Lab host the driver runs in (with --lab); with --agents, a comma-separated list: agent i runs in host i mod their number.
    lab_from: Option<Text> = None, json "lab_from";
    /// Lab host the responder runs in (with --lab); HOST.vN: on host HOST's virtual host N (its macvlan N's address), and with --agents a comma-separated list of one host's virtual hosts: agent i's responder on the i-th modulo their number.
    lab_to: Option<Text> = None, json "lab_to";
    /// Rate of every link on the lab path, e.g. 100Mbit or 10Gbit (tbf) [default: the lab file's].
    link_rate: Option<BitRate> = None, json "link_rate_bps", range "1Mbit" ..= "1000Gbit";
    /// MTU of every interface on the lab path, in bytes, e.g. 9000 [default: the lab file's].
    link_mtu: Option<u32> = None, json "link_mtu_bytes", range "68" ..= "65535";
    /// Offloads of every interface on the lab path: on, off or e.g. tso=off,gso=off (tso, gso, gro, tx_csum, rx_csum) [default: the lab file's].
    link_offloads: Option<LinkOffloads> = None, json "link_offloads";
    /// One-way delay (netem) on every link on the lab path, each direction, e.g. 10ms; 0s for none [default: the lab file's].
    link_delay: Option<Secs> = None, json "link_delay_s", range "0s" ..= "10s";
    /// Jitter (netem, uniform ± this, at most the delay) on every link on the lab path [default: the lab file's].
    link_jitter: Option<Secs> = None, json "link_jitter_s", range "0s" ..= "10s";
    /// Random packet loss (netem) on every link on the lab path, each direction, e.g. 0.1% [default: the lab file's].
    link_loss: Option<Pct> = None, json "link_loss_pct", range "0" ..= "100";
    /// Leaf qdisc of every sending end on the lab path: fq (per-flow pacing) or fifo [default: the lab file's].
    link_qdisc: Option<LinkQdisc> = None, json "link_qdisc";
    /// Per-flow pacing cap of fq on the lab path, e.g. 1Gbit (implies link_qdisc fq) [default: the lab file's].
    link_fq_maxrate: Option<BitRate> = None, json "link_fq_maxrate_bps", range "1Mbit" ..= "34Gbit";
    /// IPsec (ESP) between the lab path's hosts: off, aes-gcm-128 or aes-cbc-128-sha256 [default: the lab file's].
    link_ipsec: Option<IpsecAlgorithm> = None, json "link_ipsec";
    /// IPsec mode on the lab path: transport or tunnel [default: the lab file's, else transport].
    link_ipsec_mode: Option<IpsecMode> = None, json "link_ipsec_mode";
    /// Inbound steering (RPS): CPUs that do receive processing on every interface of the lab path, e.g. 1 or 0-3, written as each receive queue's rps_cpus in its host's namespace; the same mask for all flows (the kernel steers per queue, not per class) [default: RPS off].
    link_rps_cpus: Option<CpuList> = None, json "link_rps_cpus";
    /// Inbound steering (RFS): flow-table entries per receive queue (rps_flow_cnt) on every interface of the lab path, so a flow is processed on the CPU its reader runs on; needs the machine-wide net.core.rps_sock_flow_entries above 0, which stackbench leaves alone [default: RFS off].
    link_rps_flow_cnt: Option<u32> = None, json "link_rps_flow_cnt", range "1" ..= "1048576";
    /// NAPI coalescing: hard interrupts each interface on the lab path defers after a poll that found work (napi_defer_hard_irqs; 0: none, the latency profile; e.g. 2 with link_gro_flush_timeout for throughput) [default: 0].
    link_napi_defer_hard_irqs: Option<u32> = None, json "link_napi_defer_hard_irqs", range "0" ..= "2147483647";
    /// NAPI coalescing: how long GRO may hold packets on each interface on the lab path before flushing, e.g. 200us; also the timer that polls while interrupts are deferred (gro_flush_timeout; 0s: flush at once) [default: 0s].
    link_gro_flush_timeout: Option<Secs> = None, json "link_gro_flush_timeout_s", range "0s" ..= "1s";
    /// Transmit queue depth of every interface on the lab path, packets: the device's txqueuelen and the queue of its shaping qdiscs (tbf: this many MTU-sized packets; netem; htb's priority leaves take the device's), read back into the environment; e.g. 100 to measure priority queueing at a switch port's depth [default: txqueuelen 1000, tbf's burst + 20 ms at the rate].
    link_txqueuelen: Option<u32> = None, json "link_txqueuelen_packets", range "1" ..= "1000000";
    /// Server-host policy: nftables in host lab_to's input path with N rules that never match, walked by each new connection's first packet (with host_policy_conntrack) or by every packet (without), ahead of the accept; 0: the frame and the accept only [default: no policy].
    host_policy_rules: Option<u32> = None, json "host_policy_rules", range "0" ..= "100000";
    /// Policy: connection tracking on (established packets accepted before the rules) or off (notrack: every packet walks them) [default: on, with host_policy_rules].
    host_policy_conntrack: Option<bool> = None, json "host_policy_conntrack";
    /// Policy: log what passes the rules (accepted and reset packets), at most 10 messages/s (nftables limit), so logging costs without flooding.
    host_policy_log: bool = false, json "host_policy_log";
    /// Policy: reset (TCP RST) connections to this port of host lab_to after the rules, as a disallowed connection is (zERT's reset action).
    host_policy_reset_port: Option<u32> = None, json "host_policy_reset_port", range "1" ..= "65535";
    /// Routing fast path: an nftables flowtable on every router of the lab path (lab_from and lab_to joined through a router), so a forwarded connection, once established, skips the forward path; needs CONFIG_NF_FLOW_TABLE, which a guest with --kernel has where this host lacks it [default: off].
    router_flowtable: bool = false, json "router_flowtable";
    /// Load distribution: spread the run's connections over the first N targets of host lab_to's [[distributor]] (IPVS, its scheduler and forwarding), with the responder answering in each target behind the virtual address; needs CONFIG_IP_VS, which a guest with --kernel has where this host lacks it [default: no distribution].
    lab_targets: Option<u32> = None, json "lab_targets", range "1" ..= "64";
    /// Kernel the step runs on: host, or a Debian kernel package (linux-image-…, fetched with apt-get download) or vmlinuz path booted in a guest VM that runs the whole step.
    kernel: KernelSpec = KernelSpec::Host, json "kernel";
    /// Virtual CPUs of the guest (with --kernel).
    guest_vcpus: u32 = 2, json "guest_vcpus", range "1" ..= "64";
    /// Memory of the guest (with --kernel), e.g. 2GiB.
    guest_memory: Bytes = Bytes(2 << 30), json "guest_memory_bytes", range "256MiB" ..= "256GiB";
    /// Guest CPU: auto (KVM when a guest boots with it, else TCG), kvm, or tcg (emulated: results are functional only).
    guest_accel: GuestAccel = GuestAccel::Auto, json "guest_accel";
    /// Kernel of a second guest, the responder's (with --kernel, the driver's): two guests joined by a virtual wire (qemu's dgram backend, a virtio-net adapter each), the control connection and the data over it; host: no second guest, both sides in the one guest over loopback.
    peer_kernel: KernelSpec = KernelSpec::Host, json "peer_kernel";
    /// Queue pairs of each pair guest's virtio-net adapter (with --peer-kernel); above 1 needs a multiqueue backend (tap in a namespace of its own, root).
    guest_queues: u32 = 1, json "guest_queues", range "1" ..= "8";
    /// Driver processes (agents) the run is split over, each running an exact segment of every class [default: 1, or as many as the population needs under the open-file limit].
    agents: Option<u32> = None, json "agents", range "1" ..= "1024";
    /// Who starts the agents: local (this host, one responder process each), slurm (srun, one task per agent) or external (started elsewhere, e.g. a Kubernetes Indexed Job; they connect to agent_listen).
    launcher: Launcher = Launcher::Local, json "launcher";
    /// Address the controller listens on for its agents, e.g. 0.0.0.0:7700 [default: 127.0.0.1, any port, for local and slurm on this host].
    agent_listen: Option<Text> = None, json "agent_listen";
    /// File holding the run token (at least 16 bytes, mode 600) that the run's agents and responders prove over an HMAC challenge before anything else is read on their connections; give the file a `serve --token-file` was given, and for launcher external the token in the agents' Secret [default: a random token per run, passed to the processes the run starts in their environment].
    token_file: Option<Text> = None, json "token_file";
    /// Serve the run's live figures (OpenMetrics text, GET /metrics) on this address while it runs, e.g. 127.0.0.1:9464; with agents the controller serves them merged; docs/metrics.md lists the metrics [default: not served].
    metrics_listen: Option<Text> = None, json "metrics_listen";
    /// Seed of the think-time and arrival draws, for reproducible runs [default: a random seed, stored with the result].
    seed: Option<u64> = None, json "seed";
}

impl RunSettings {
    /// What protocol h2's clients announce: the `h2_*` settings.
    pub fn h2_params(&self) -> H2Params {
        H2Params {
            window_bytes: self.h2_window,
            connection_window_bytes: self.h2_connection_window,
            max_frame_bytes: self.h2_max_frame,
        }
    }

    /// What protocol amqp's clients do: the `amqp_*` settings (SASL
    /// ANONYMOUS: credentials are not taken from settings, which are
    /// stored with every result).
    pub fn amqp_params(&self) -> AmqpParams {
        AmqpParams {
            pattern: self.amqp_pattern,
            persistent: self.amqp_persistent,
            credit: self.amqp_credit,
            body: self.amqp_body,
            compress: self.amqp_compress,
            queues: self.amqp_queues,
            queue: self.amqp_queue.0.clone(),
            user: self
                .target
                .as_ref()
                .and_then(|t| PlainTarget::parse(&t.0))
                .and_then(|t| t.user)
                .map(str::to_string),
            // Read from amqp_password_file when the run is resolved.
            password: None,
        }
    }

    /// The socket options these settings give.
    pub fn socket_options(&self) -> SocketOptions {
        SocketOptions {
            nodelay: self.nodelay.unwrap_or(self.transport == Transport::Tls),
            waitall: self.waitall,
            quickack: self.quickack,
            sndbuf_bytes: self.sndbuf.map(|b| b.0 as u32),
            rcvbuf_bytes: self.rcvbuf.map(|b| b.0 as u32),
            crr_close: self.crr_close,
            busy_poll_us: self.busy_poll.map(|d| d.0.as_micros() as u32),
            // The driver sets each class's own level; at run level the first
            // one stands for all, so `effective_options` can drop them.
            priority: self.priority.as_ref().and_then(|p| p.level(0)),
            // The transport decides (`effective_options`).
            cork: false,
        }
    }

    /// Protocol tn3270's options these settings give.
    pub fn tn3270_options(&self) -> Tn3270Options {
        Tn3270Options {
            tn3270e: self.tn3270e,
            model: u8::try_from(self.tn3270_model).unwrap_or(2),
            lu: self.tn3270_lu,
            responder: self.responder_tn3270e,
            // Read and parsed when the run is resolved (`tn3270_script`).
            script: None,
            app: self.responder_tn3270_app,
        }
    }

    /// The inverse of [`Self::socket_options`]: takes over the options a
    /// transport actually applied (a `busy_poll` kept keeps its own spelling).
    pub fn set_socket_options(&mut self, o: &SocketOptions) {
        self.nodelay = Some(o.nodelay);
        self.waitall = o.waitall;
        self.quickack = o.quickack;
        self.sndbuf = o.sndbuf_bytes.map(|b| Bytes(u64::from(b)));
        self.rcvbuf = o.rcvbuf_bytes.map(|b| Bytes(u64::from(b)));
        self.crr_close = o.crr_close;
        if o.busy_poll_us.is_none() {
            self.busy_poll = None;
        }
        if o.priority.is_none() {
            self.priority = None;
        }
    }

    /// Refuses settings that are each valid but contradict one another,
    /// so a run flag and a study key are refused alike (a study when it is
    /// planned, before anything runs).
    pub fn check_combination(&self) -> Result<(), SettingError> {
        if self.ipv6 && self.transport == Transport::Unix {
            return Err(SettingError {
                name: "ipv6".into(),
                value: "true".into(),
                message: "transport unix uses a socket file, not an IP address: drop ipv6 \
                          or use transport tcp, mptcp or tls"
                    .into(),
            });
        }
        if let Some(t) = &self.target {
            check_target_form(&t.0).map_err(|message| SettingError {
                name: "target".into(),
                value: t.0.clone(),
                message,
            })?;
        }
        let plain = self.target.as_ref().and_then(|t| PlainTarget::parse(&t.0));
        if let Some(t) = plain {
            self.check_plain_target(&t)?;
        }
        if plain.is_none_or(|t| !t.tls) && (self.ca.is_some() || self.insecure) {
            let name = if self.ca.is_some() { "ca" } else { "insecure" };
            return Err(SettingError {
                name: name.into(),
                value: self.text_of(name).unwrap_or_default(),
                message: format!(
                    "{name} is about verifying an https:// target's certificate (stackbench \
                     serve's is never verified): give --target https://HOST:PORT or drop {name}"
                ),
            });
        }
        if plain.is_some_and(|t| t.protocol == AppProtocol::Amqp)
            && self.amqp_pattern == AmqpPattern::RequestReply
            && self.amqp_queues == AmqpQueues::PerClient
        {
            return Err(SettingError {
                name: "amqp_queues".into(),
                value: "per-client".into(),
                message: "request-reply against a broker puts requests on the queue responder \
                          applications get from (QUEUE.request); no responder gets from each \
                          client's own: use amqp_queues shared, or amqp_pattern put-get"
                    .into(),
            });
        }
        if self.protocol == AppProtocol::Ftp && plain.is_none_or(|t| t.protocol != AppProtocol::Ftp)
        {
            // stackbench's responder has no FTP half yet (a passive
            // listener per session): the engine's ftp row says so.
            return Err(SettingError {
                name: "protocol".into(),
                value: "ftp".into(),
                message: "protocol ftp drives an FTP server, and stackbench serve does not speak \
                          FTP yet: add --target ftp://HOST:PORT/DIR/ (e.g. vsftpd, with files \
                          named by their sizes in DIR)"
                    .into(),
            });
        }
        if self.amqp_password_file.is_some() && plain.is_none_or(|t| t.user.is_none()) {
            return Err(SettingError {
                name: "amqp_password_file".into(),
                value: self.text_of("amqp_password_file").unwrap_or_default(),
                message: "the password is for the target's user: give --target \
                          amqp://USER@HOST:PORT, or drop amqp_password_file"
                    .into(),
            });
        }
        if self.waitall && self.protocol.framed() {
            return Err(SettingError {
                name: "waitall".into(),
                value: "true".into(),
                message: format!(
                    "waitall waits for whole messages of sizes known in advance, and protocol \
                     {} reads a message's length from its head: drop waitall",
                    self.protocol.name()
                ),
            });
        }
        if let Some(lu) = self.tn3270_lu {
            let why = if self.protocol != AppProtocol::Tn3270 {
                Some(format!("protocol {} has no LU", self.protocol.name()))
            } else if self.tn3270e == Tn3270e::Off {
                Some("an LU is asked for in TN3270E's CONNECT, and tn3270e is off".to_string())
            } else {
                None
            };
            if let Some(why) = why {
                return Err(SettingError {
                    name: "tn3270_lu".into(),
                    value: lu.to_string(),
                    message: format!(
                        "{why}: drop tn3270_lu, or use protocol tn3270 with tn3270e auto or on"
                    ),
                });
            }
        }
        let tn3270_only = [
            ("tn3270_script", self.tn3270_script.is_some()),
            (
                "responder_tn3270_app",
                self.responder_tn3270_app != ResponderApp::Echo,
            ),
        ];
        if let Some((name, _)) = tn3270_only.iter().find(|(_, given)| *given) {
            if self.protocol != AppProtocol::Tn3270 {
                return Err(SettingError {
                    name: (*name).into(),
                    value: self.text_of(name).unwrap_or_default(),
                    message: format!(
                        "{name} applies to protocol tn3270, and the protocol is {}: add \
                         --protocol tn3270 or drop {name}",
                        self.protocol.name()
                    ),
                });
            }
        }
        let policy_parts = [
            (
                "host_policy_conntrack",
                self.host_policy_conntrack.is_some(),
            ),
            ("host_policy_log", self.host_policy_log),
            (
                "host_policy_reset_port",
                self.host_policy_reset_port.is_some(),
            ),
        ];
        if let (None, Some((name, _))) = (
            self.host_policy_rules,
            policy_parts.iter().find(|(_, given)| *given),
        ) {
            return Err(SettingError {
                name: (*name).into(),
                value: self.text_of(name).unwrap_or_default(),
                message: format!(
                    "{name} is part of a host policy, and none is asked for: add host_policy_rules N (0 for the frame alone) or drop {name}"
                ),
            });
        }
        Ok(())
    }

    /// A plain server's target needs its protocol and the transport its
    /// scheme says: tcp for `http://` and `tn3270://`; tls for `https://`
    /// (which implies it: the default tcp is read as tls, see
    /// [`Self::with_implied_transport`]); and `ca` and `insecure` exclude
    /// each other.
    fn check_plain_target(&self, t: &PlainTarget<'_>) -> Result<(), SettingError> {
        let refuse = |message: String| {
            Err(SettingError {
                name: "target".into(),
                value: self.text_of("target").unwrap_or_default(),
                message,
            })
        };
        let p = t.protocol;
        let scheme = t.scheme;
        if let Some(user) = t.user {
            if p != AppProtocol::Amqp {
                return refuse(format!(
                    "a user in the target is a SASL login (amqp:// targets): drop '{user}@'"
                ));
            }
            if let Some((name, _)) = user.split_once(':') {
                return refuse(format!(
                    "a password in the target shows in ps to every user of this host and is \
                     stored with the result: give {scheme}{name}@{} and the password in \
                     amqp_password_file FILE",
                    t.address
                ));
            }
        }
        let article = if scheme.starts_with(['h', 'a', 'f']) {
            "an"
        } else {
            "a"
        };
        let over = if t.tls { "tls" } else { "tcp" };
        if self.protocol.scheme_family() != p {
            let names: Vec<&str> = p.family().map(AppProtocol::name).collect();
            return refuse(format!(
                "{article} {scheme} target is a plain {} server, not stackbench serve: \
                 add protocol {} (over transport {over})",
                p.server_name(),
                names.join(" or ")
            ));
        }
        let implied = t.tls && self.transport == Transport::Tcp;
        if t.tls && !implied && self.transport != Transport::Tls {
            return refuse(format!(
                "{article} {scheme} target is {} over TLS, not over transport {}: drop \
                 transport (https:// implies tls)",
                p.server_name(),
                self.transport.name()
            ));
        }
        if !t.tls && self.transport != Transport::Tcp {
            let fix = match (self.transport, p.tls_scheme()) {
                (Transport::Tls, Some(tls)) => {
                    format!("for TLS give {tls}{}, else drop transport tls", t.rest)
                }
                _ => "drop transport".to_string(),
            };
            return refuse(format!(
                "{article} {scheme} target is a plain {} server in clear text over tcp, not \
                 transport {}: {fix}",
                p.server_name(),
                self.transport.name()
            ));
        }
        if self.ca.is_some() && self.insecure {
            return Err(SettingError {
                name: "insecure".into(),
                value: "true".into(),
                message: "insecure skips the verification ca is for: drop one of them".into(),
            });
        }
        Ok(())
    }

    /// These settings with the transport a target's scheme implies:
    /// `https://` runs over `tls` (the default tcp read as tls, so that the
    /// stored settings say what ran).
    pub fn with_implied_transport(mut self) -> RunSettings {
        let tls = self
            .target
            .as_ref()
            .and_then(|t| PlainTarget::parse(&t.0))
            .is_some_and(|t| t.tls);
        if tls && self.transport == Transport::Tcp {
            self.transport = Transport::Tls;
        }
        self
    }

    /// `(name, canonical text)` of every setting, in table order.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        SETTINGS
            .iter()
            .map(|d| (d.name, self.text_of(d.name).unwrap_or_default()))
            .collect()
    }

    /// `(name, text)` of the settings that differ from the defaults.
    pub fn changed(&self) -> Vec<(&'static str, String)> {
        let base = RunSettings::default();
        self.describe()
            .into_iter()
            .filter(|(n, t)| base.text_of(n).as_deref() != Some(t.as_str()))
            .collect()
    }
}

/// A target's shape, before any name is looked up: `HOST:PORT` (stackbench
/// serve), or a scheme of the protocol table's plain servers and
/// `HOST:PORT`; an HTTP one (`http://`, `https://`) may name the path every
/// request asks for, as wrk's URL does, and an FTP one the directory or
/// file its transfers move. Another scheme read as "failed to
/// lookup address information", a path elsewhere as "invalid port value".
fn check_target_form(target: &str) -> Result<(), String> {
    let forms = || {
        let plain = AppProtocol::ALL.iter().flat_map(|p| {
            [p.plain_scheme(), p.tls_scheme()]
                .into_iter()
                .flatten()
                .map(move |scheme| format!("{scheme}HOST:PORT (protocol {})", p.name()))
        });
        let all: Vec<String> = std::iter::once("HOST:PORT (stackbench serve)".to_string())
            .chain(plain)
            .collect();
        all.join(", ")
    };
    let (address, takes_path) = match PlainTarget::parse(target) {
        // FTP's path is the directory (ending in `/`) or file its
        // transfers move.
        Some(t) => (
            t.rest,
            matches!(t.protocol, AppProtocol::Http1 | AppProtocol::Ftp),
        ),
        None => match target.split_once("://") {
            Some((scheme, _)) => {
                return Err(format!(
                    "{target}: no protocol speaks scheme {scheme}://: use {}",
                    forms()
                ))
            }
            None => (target, false),
        },
    };
    if let Some((_, path)) = address.split_once('/') {
        let bare = &target[..target.len() - path.len() - 1];
        if !takes_path {
            return Err(format!(
                "{target}: a target takes no path (/{path}): give {bare}; what is asked \
                 for comes from the workload's sizes"
            ));
        }
        if path.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "{target}: a path has no spaces or control characters: write them %-encoded \
                 (%20)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_is_settable_by_its_name() {
        let defaults = RunSettings::default();
        for def in SETTINGS {
            let text = defaults.text_of(def.name).unwrap();
            let mut s = RunSettings::default();
            s.set(def.name, &text)
                .unwrap_or_else(|e| panic!("{}: default text '{text}' refused: {e}", def.name));
            assert_eq!(s, defaults, "{}", def.name);
            assert!(!def.help.trim().is_empty(), "{} has no help", def.name);
        }
    }

    #[test]
    fn ranges_are_checked_in_the_settings_spelling() {
        let mut s = RunSettings::default();
        let e = s.set("threads", "0").unwrap_err();
        assert_eq!(e.message, "out of range: use 1 to 1024");
        let e = s.set("duration", "25h").unwrap_err();
        assert_eq!(e.message, "out of range: use 1ms to 24h");
        s.set("duration", "30s").unwrap();
        assert_eq!(s.text_of("duration").unwrap(), "30s");
    }

    #[test]
    fn json_names_carry_units() {
        let mut s = RunSettings::default();
        s.set("sndbuf", "256kB").unwrap();
        s.set("duration", "1.5s").unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["sndbuf_bytes"], 262144);
        assert_eq!(v["duration_s"], 1.5);
        let back: RunSettings = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }

    /// A range that does not parse, or a type without an order, would switch
    /// the check off while `--help` still printed the range.
    #[test]
    fn every_range_parses_and_is_checked() {
        for def in SETTINGS {
            let Some((lo, hi)) = def.range else { continue };
            let mut s = RunSettings::default();
            s.set(def.name, lo)
                .unwrap_or_else(|e| panic!("{}: low bound {lo}: {e}", def.name));
            s.set(def.name, hi)
                .unwrap_or_else(|e| panic!("{}: high bound {hi}: {e}", def.name));
        }
    }

    #[test]
    fn socket_options_round_trip() {
        let mut s = RunSettings::default();
        for (k, v) in [
            ("nodelay", "true"),
            ("sndbuf", "256kB"),
            ("busy_poll", "50us"),
            ("crr_close", "abort"),
        ] {
            s.set(k, v).unwrap();
        }
        let mut back = RunSettings {
            busy_poll: s.busy_poll,
            ..RunSettings::default()
        };
        back.set_socket_options(&s.socket_options());
        assert_eq!(back, s);
    }

    /// TLS servers run with TCP_NODELAY (nginx's `tcp_nodelay on`), so a tls
    /// run does too unless told otherwise; `--nodelay=false` still turns it
    /// off, to reproduce a Nagle/delayed-ACK stall on purpose.
    #[test]
    fn nodelay_defaults_on_for_tls_only() {
        let mut s = RunSettings::default();
        assert!(!s.socket_options().nodelay);
        s.set("transport", "tls").unwrap();
        assert!(s.socket_options().nodelay);
        s.set("nodelay", "false").unwrap();
        assert!(!s.socket_options().nodelay);
        s.set("nodelay", "default").unwrap();
        s.set("transport", "unix").unwrap();
        assert!(!s.socket_options().nodelay);
    }

    /// Conntrack, logging and a reset port belong to a policy: without
    /// `host_policy_rules` they would be stored and silently do nothing.
    #[test]
    fn policy_parts_need_the_policy() {
        for (name, value) in [
            ("host_policy_conntrack", "false"),
            ("host_policy_log", "true"),
            ("host_policy_reset_port", "443"),
        ] {
            let mut s = RunSettings::default();
            s.set(name, value).unwrap();
            let e = s.check_combination().unwrap_err();
            assert_eq!(e.name, name);
            assert!(e.message.contains("add host_policy_rules N"), "{e}");
            s.set("host_policy_rules", "0").unwrap();
            s.check_combination().unwrap();
        }
        let mut s = RunSettings::default();
        assert!(s.set("host_policy_rules", "100001").is_err());
        assert!(s.set("host_policy_reset_port", "65536").is_err());
    }

    /// A plain HTTP server answers HTTP only: raw payloads to it would
    /// measure its error path.
    #[test]
    fn a_target_is_host_port_after_a_known_scheme_or_none() {
        for ok in [
            "127.0.0.1:7000",
            "[::1]:7000",
            "http://h:80",
            "tn3270://h:23",
        ] {
            check_target_form(ok).unwrap();
        }
        let e = check_target_form("gopher://h:70").unwrap_err();
        assert!(e.contains("no protocol speaks scheme gopher://"), "{e}");
        check_target_form("ftp://h:21/pub/").unwrap();
        assert!(e.contains("http://HOST:PORT (protocol http1)"), "{e}");
        // An HTTP target may name the path every request asks for.
        check_target_form("http://h:80/4096").unwrap();
        check_target_form("https://h:443/api/x?q=1").unwrap();
        let e = check_target_form("tn3270://h:23/x").unwrap_err();
        assert!(e.contains("takes no path (/x): give tn3270://h:23;"), "{e}");
        let e = check_target_form("https://h:443/a b").unwrap_err();
        assert!(e.contains("%-encoded"), "{e}");
        let e = check_target_form("gopher://h:70").unwrap_err();
        assert!(e.contains("https://HOST:PORT (protocol http1)"), "{e}");
    }

    #[test]
    fn a_plain_server_target_needs_http1() {
        let mut s = RunSettings::default();
        s.set("target", "http://127.0.0.1:8080").unwrap();
        let e = s.check_combination().unwrap_err();
        assert_eq!(e.name, "target");
        assert!(e.message.contains("add protocol http1"), "{e}");
        s.set("protocol", "http1").unwrap();
        s.check_combination().unwrap();
        s.set("transport", "unix").unwrap();
        assert!(s.check_combination().is_err());
        // A stackbench responder speaks both.
        s.set("target", "127.0.0.1:7000").unwrap();
        s.check_combination().unwrap();
        s.set("transport", "tcp").unwrap();
        s.set("waitall", "true").unwrap();
        let e = s.check_combination().unwrap_err();
        assert!(e.message.contains("drop waitall"), "{e}");
    }

    /// `https://` implies transport tls (the default tcp read as tls);
    /// another transport, `http://` over tls, or `ca`/`insecure` without an
    /// https target are refused in one line.
    #[test]
    fn an_https_target_implies_tls_and_verification_settings_need_one() {
        let mut s = RunSettings::default();
        s.set("target", "https://127.0.0.1:8443/x").unwrap();
        s.set("protocol", "http1").unwrap();
        s.check_combination().unwrap();
        assert_eq!(s.clone().with_implied_transport().transport, Transport::Tls);
        s.set("transport", "tls").unwrap();
        s.check_combination().unwrap();
        s.set("transport", "mptcp").unwrap();
        let e = s.check_combination().unwrap_err();
        assert!(e.message.contains("(https:// implies tls)"), "{e}");
        s.set("transport", "tls").unwrap();
        s.set("insecure", "true").unwrap();
        s.check_combination().unwrap();
        s.set("ca", "/tmp/ca.pem").unwrap();
        let e = s.check_combination().unwrap_err();
        assert!(e.message.contains("drop one of them"), "{e}");
        s.set("target", "http://127.0.0.1:8080/x").unwrap();
        s.set("insecure", "false").unwrap();
        s.set("ca", "/tmp/ca.pem").unwrap();
        let e = s.check_combination().unwrap_err();
        assert!(
            e.message.contains("for TLS give https://127.0.0.1:8080/x"),
            "{e}"
        );
        s.set("transport", "tcp").unwrap();
        let e = s.check_combination().unwrap_err();
        assert_eq!(e.name, "ca");
        assert!(e.message.contains("give --target https://"), "{e}");
    }

    /// A plain TN3270 server (a z/OS TN3270 server, hercules) speaks TN3270
    /// only, and an HTTP target is no TN3270 one.
    #[test]
    fn a_plain_tn3270_target_needs_tn3270() {
        let mut s = RunSettings::default();
        s.set("target", "tn3270://127.0.0.1:23").unwrap();
        let e = s.check_combination().unwrap_err();
        assert_eq!(e.name, "target");
        assert_eq!(
            e.message,
            "a tn3270:// target is a plain TN3270 server, not stackbench serve: add protocol \
             tn3270 (over transport tcp)"
        );
        s.set("protocol", "http1").unwrap();
        assert!(s.check_combination().is_err());
        s.set("protocol", "tn3270").unwrap();
        s.check_combination().unwrap();
        s.set("target", "http://127.0.0.1:80").unwrap();
        let e = s.check_combination().unwrap_err();
        assert!(e.message.contains("add protocol http1"), "{e}");
    }

    #[test]
    fn unknown_names_list_the_allowed_ones() {
        let e = RunSettings::default().set("durration", "1s").unwrap_err();
        assert!(e.message.contains("use one of duration, warmup"), "{e}");
        assert_eq!(find("--client-cpus").unwrap().name, "client_cpus");
    }
}
