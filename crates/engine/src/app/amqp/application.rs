//! The responder application against a broker (`stackbench serve
//! --protocol amqp --broker amqp://HOST:PORT`): mq-cph's Responder. One
//! AMQP 1.0 connection to the broker per thread; each gets requests from
//! the shared request queue (`QUEUE.request`, competing with every other
//! responder on it) and puts each reply on the queue the request's
//! `reply-to` names, its correlation id the request's message id, its body
//! the size the request's `z` application property asks for (the request's
//! own size when absent, for requesters other than stackbench's).
//!
//! Blocking I/O on one socket per connection: the broker, not this
//! process, is what a run measures, and a thread per connection keeps the
//! state machine in one place. Reply links are attached on first use, one
//! per reply queue, and a reply waits in its link's queue until the broker
//! granted credit. A persistent request (sent unsettled by the requester)
//! is accepted only once the broker accepted its durable reply, so a
//! request is never lost between the two queues; a non-persistent one
//! arrives settled and its reply is sent settled.
//!
//! [`Application::connect`] runs the whole opening (SASL, open, begin, the
//! request link's attach) before anything is served, so an unreachable
//! broker, a refused login, a peer that is not AMQP 1.0 or a refused queue
//! is one line before the first request.

use std::collections::{HashMap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fe2o3_amqp_types::definitions::{Handle, ReceiverSettleMode, Role, SenderSettleMode};
use fe2o3_amqp_types::messaging::{
    Accepted, ApplicationProperties, DeliveryState, Header, MessageId, Properties, Source, Target,
    TargetArchetype, TerminusDurability,
};
use fe2o3_amqp_types::performatives::{
    Attach, Begin, ChannelMax, Disposition, Flow, MaxFrameSize, Open, Performative, Transfer,
};
use fe2o3_amqp_types::primitives::SimpleValue;
use serde_amqp::primitives::{Binary, Symbol};
use stackbench_model::AmqpBody;

use super::frames::{self, In, Reader};
use super::sasl;
use super::{
    body_of, content_type, deflate_body, fill_body, inflate_body, level_of, show_error, DEFLATE,
    MAX_FRAME_BYTES, SESSION_WINDOW,
};
use crate::app::Fault;

/// Our handle of the request link; reply links take the next ones.
const REQUESTS: u32 = 0;
/// How long the opening may take before the broker is called unresponsive.
pub const OPEN_WITHIN: Duration = Duration::from_secs(10);
/// How often a blocked read wakes to look at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// What a responder application connects to and serves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The broker's `HOST:PORT`.
    pub broker: String,
    /// SASL PLAIN credentials; `None`: ANONYMOUS.
    pub login: Option<(String, String)>,
    /// The queue name prefix (`amqp_queue`): requests come from
    /// `QUEUE.request`.
    pub queue: String,
    /// Credit granted on the request link (the prefetch).
    pub credit: u32,
}

impl Options {
    /// The queue every requester puts on and every responder gets from.
    pub fn request_queue(&self) -> String {
        format!("{}.request", self.queue)
    }
}

/// Counters every connection of one process adds to.
#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub replies: AtomicU64,
    pub request_bytes: AtomicU64,
    pub reply_bytes: AtomicU64,
}

/// A request read, waiting for its reply to be sent (or accepted).
#[derive(Debug, Clone)]
struct Request {
    /// Its delivery id when it came unsettled (to accept later).
    unsettled: Option<u32>,
    durable: bool,
    message_id: Option<MessageId>,
    reply_to: String,
    reply_body: u64,
    body: AmqpBody,
    /// A compressed request (content-encoding deflate): the zlib level to
    /// compress its reply at.
    level: Option<u32>,
}

/// A link putting replies on one reply queue.
#[derive(Debug, Default)]
struct ReplyLink {
    handle: u32,
    attached: bool,
    sent: u32,
    credit: u32,
    waiting: VecDeque<Request>,
}

/// One connection to the broker, opened and with its request link attached.
pub struct Application {
    stream: TcpStream,
    reader: Reader,
    opts: Options,
    /// Frames to write (flushed after each read).
    out: Vec<u8>,
    peer_max_frame: u32,
    next_outgoing_id: u32,
    /// Request link: deliveries received, credit left.
    received: u32,
    credit_left: u32,
    /// The request being read (a multi-frame delivery), its bytes so far.
    reading: Option<Request>,
    reading_bytes: u64,
    links: HashMap<String, ReplyLink>,
    next_handle: u32,
    /// Durable replies sent, by delivery id: the request each answers.
    unaccepted: HashMap<u32, Request>,
    next_delivery_id: u32,
    /// Opening progress.
    got_outcome: bool,
    got_open: bool,
    got_begin: bool,
    attached: bool,
    /// Whether the opening attaches the request link (not for a probe).
    attach: bool,
    /// Compression: an uncompressed body's scratch, a compressed reply.
    plain: Vec<u8>,
    packed: Vec<u8>,
}

impl Application {
    /// Connects to the broker and opens: SASL, open, begin, and the
    /// request link attached with its credit granted. Every failure is
    /// one line naming the broker.
    pub fn connect(opts: &Options, name: &str) -> Result<Application, Fault> {
        Self::open(opts, name, true)
    }

    /// Opens a connection (SASL, open, begin) and closes it: what a run
    /// checks before it starts. Attaches no link (a request link with
    /// credit would take requests from the queue).
    pub fn probe(opts: &Options) -> Result<(), Fault> {
        Self::open(opts, "probe", false).map(drop)
    }

    fn open(opts: &Options, name: &str, attach: bool) -> Result<Application, Fault> {
        let named = |what: String| Fault(format!("broker {}: {what}", opts.broker));
        let addr = opts
            .broker
            .to_socket_addrs()
            .map_err(|e| named(format!("cannot resolve it ({e})")))?
            .next()
            .ok_or_else(|| named("resolves to no address".into()))?;
        let stream = TcpStream::connect_timeout(&addr, OPEN_WITHIN)
            .map_err(|e| named(format!("cannot connect ({e}): is it running?")))?;
        let _ = stream.set_nodelay(true);
        let mut app = Application {
            stream,
            reader: Reader::expecting_header(),
            opts: opts.clone(),
            out: Vec::new(),
            peer_max_frame: 512,
            next_outgoing_id: 0,
            received: 0,
            credit_left: 0,
            reading: None,
            reading_bytes: 0,
            links: HashMap::new(),
            next_handle: REQUESTS + 1,
            unaccepted: HashMap::new(),
            next_delivery_id: 0,
            got_outcome: false,
            got_open: false,
            got_begin: false,
            attached: false,
            attach: true,
            plain: Vec::new(),
            packed: Vec::new(),
        };
        app.out.extend_from_slice(&frames::SASL_HEADER);
        app.flush().map_err(|f| named(f.0))?;
        let deadline = Instant::now() + OPEN_WITHIN;
        let stop = AtomicBool::new(false);
        app.attach = attach;
        while !app.opened() {
            if Instant::now() > deadline {
                return Err(named(format!(
                    "no AMQP 1.0 opening within {} s: is it an AMQP 1.0 broker?",
                    OPEN_WITHIN.as_secs()
                )));
            }
            app.read_once(&stop, |app, input| app.opening(input, name))
                .map_err(|f| named(f.0))?;
            app.flush().map_err(|f| named(f.0))?;
        }
        Ok(app)
    }

    /// Whether the opening is over: the request link attached (a probe:
    /// the session begun).
    fn opened(&self) -> bool {
        if self.attach {
            self.attached
        } else {
            self.got_open && self.got_begin
        }
    }

    /// Serves requests until `stop` is set or the broker ends the
    /// connection (a fault, with what it said).
    pub fn serve(&mut self, stop: &AtomicBool, counters: &Counters) -> Result<(), Fault> {
        while !stop.load(Ordering::Relaxed) {
            self.read_once(stop, |app, input| app.serving(input, counters))?;
            self.flush()?;
        }
        Ok(())
    }

    /// Reads what is there (waiting at most [`POLL`]) and feeds it to `on`.
    fn read_once(
        &mut self,
        stop: &AtomicBool,
        mut on: impl FnMut(&mut Application, In<'_>) -> Result<bool, Fault>,
    ) -> Result<(), Fault> {
        let _ = self.stream.set_read_timeout(Some(POLL));
        let mut buf = [0u8; 64 * 1024];
        let n = match self.stream.read(&mut buf) {
            Ok(0) => return Err(Fault("the broker closed the connection".into())),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Ok(())
            }
            Err(e) if e.kind() == ErrorKind::Interrupted || stop.load(Ordering::Relaxed) => {
                return Ok(())
            }
            Err(e) => return Err(Fault(format!("reading from the broker: {e}"))),
        };
        let mut reader = std::mem::take(&mut self.reader);
        let fed = reader.feed(&buf[..n], |input| on(self, input));
        self.reader = reader;
        fed
    }

    fn flush(&mut self) -> Result<(), Fault> {
        if self.out.is_empty() {
            return Ok(());
        }
        self.stream
            .write_all(&self.out)
            .map_err(|e| Fault(format!("writing to the broker: {e}")))?;
        self.out.clear();
        Ok(())
    }

    /// One input of the opening.
    fn opening(&mut self, input: In<'_>, name: &str) -> Result<bool, Fault> {
        match input {
            In::Header(h) if !self.got_outcome => {
                frames::check_header(&h, &frames::SASL_HEADER)?;
                Ok(false)
            }
            In::Header(h) => {
                frames::check_header(&h, &frames::AMQP_HEADER)?;
                Ok(false)
            }
            In::Frame { kind, kept, .. } if kind == frames::TYPE_SASL => self.sasl(kept, name),
            In::Frame { kept: [], .. } => Ok(false),
            In::Frame { kept, .. } => {
                let (performative, _) = frames::performative(kept)?;
                match performative {
                    Performative::Open(open) => {
                        self.peer_max_frame = open.max_frame_size.0;
                        self.got_open = true;
                    }
                    Performative::Begin(_) => self.got_begin = true,
                    Performative::Attach(a) if a.handle.0 == REQUESTS || !self.attached => {
                        if a.source.is_none() {
                            // A detach with the reason follows; wait for it.
                            return Ok(false);
                        }
                        self.attached = true;
                    }
                    Performative::Detach(d) => {
                        return Err(show_error(
                            &format!("request queue {}'s link", self.opts.request_queue()),
                            d.error.as_ref(),
                        ))
                    }
                    Performative::End(e) => return Err(show_error("session", e.error.as_ref())),
                    Performative::Close(c) => {
                        return Err(show_error("connection", c.error.as_ref()))
                    }
                    _ => {}
                }
                Ok(false)
            }
        }
    }

    /// The SASL exchange: mechanisms answered by init and the whole AMQP
    /// opening (pipelined), the outcome checked.
    fn sasl(&mut self, kept: &[u8], name: &str) -> Result<bool, Fault> {
        let login = self.opts.login.as_ref();
        match sasl::answer(kept, login.map(|(u, p)| (u.as_str(), p.as_str())), "it")? {
            Some(init) => {
                frames::push(&mut self.out, frames::TYPE_SASL, 0, &init)?;
                self.out.extend_from_slice(&frames::AMQP_HEADER);
                self.push_opening(name)?;
                Ok(false)
            }
            None => {
                self.got_outcome = true;
                Ok(true)
            }
        }
    }

    /// Open, begin, the request link's attach and its credit.
    fn push_opening(&mut self, name: &str) -> Result<(), Fault> {
        let open = Open {
            container_id: format!("stackbench-responder-{name}"),
            hostname: None,
            max_frame_size: MaxFrameSize(MAX_FRAME_BYTES),
            channel_max: ChannelMax(0),
            idle_time_out: None,
            outgoing_locales: None,
            incoming_locales: None,
            offered_capabilities: None,
            desired_capabilities: None,
            properties: None,
        };
        frames::push(&mut self.out, frames::TYPE_AMQP, 0, &open)?;
        let begin = Begin {
            remote_channel: None,
            next_outgoing_id: 0,
            incoming_window: SESSION_WINDOW,
            outgoing_window: SESSION_WINDOW,
            handle_max: Handle(u32::MAX),
            offered_capabilities: None,
            desired_capabilities: None,
            properties: None,
        };
        frames::push(&mut self.out, frames::TYPE_AMQP, 0, &begin)?;
        if !self.attach {
            return Ok(());
        }
        let attach = Attach {
            name: format!("stackbench-responder-{name}-get"),
            handle: Handle(REQUESTS),
            role: Role::Receiver,
            snd_settle_mode: SenderSettleMode::Mixed,
            rcv_settle_mode: ReceiverSettleMode::First,
            // Durable, as the requesters declare it (docs/transports.md).
            source: Some(Box::new(Source {
                address: Some(self.opts.request_queue()),
                durable: TerminusDurability::Configuration,
                ..Source::default()
            })),
            target: Some(Box::new(TargetArchetype::Target(Target::default()))),
            unsettled: None,
            incomplete_unsettled: false,
            initial_delivery_count: None,
            max_message_size: None,
            offered_capabilities: None,
            desired_capabilities: None,
            properties: None,
        };
        frames::push(&mut self.out, frames::TYPE_AMQP, 0, &attach)?;
        self.grant_credit()
    }

    /// A flow renewing the request link's credit.
    fn grant_credit(&mut self) -> Result<(), Fault> {
        self.credit_left = self.opts.credit;
        let flow = Flow {
            next_incoming_id: None,
            incoming_window: SESSION_WINDOW,
            next_outgoing_id: self.next_outgoing_id,
            outgoing_window: SESSION_WINDOW,
            handle: Some(Handle(REQUESTS)),
            delivery_count: Some(self.received),
            link_credit: Some(self.opts.credit),
            available: None,
            drain: false,
            echo: false,
            properties: None,
        };
        frames::push(&mut self.out, frames::TYPE_AMQP, 0, &flow).map(drop)
    }

    /// One input while serving.
    fn serving(&mut self, input: In<'_>, counters: &Counters) -> Result<bool, Fault> {
        let In::Frame {
            kind, kept, len, ..
        } = input
        else {
            return Err(Fault(
                "a protocol header in the middle of the connection".into(),
            ));
        };
        if kind != frames::TYPE_AMQP || kept.is_empty() {
            return Ok(false);
        }
        let (performative, at) = frames::performative(kept)?;
        match performative {
            Performative::Transfer(t) if t.handle.0 == REQUESTS => {
                self.request(&t, &kept[at..], len - at as u64, counters)?
            }
            Performative::Transfer(t) => {
                return Err(Fault(format!(
                    "a transfer on link handle {}, which is not the request link",
                    t.handle.0
                )))
            }
            Performative::Attach(a) => self.reply_link_attached(&a)?,
            Performative::Flow(f) => self.reply_link_flow(&f, counters)?,
            Performative::Disposition(d) => self.replies_settled(&d)?,
            Performative::Detach(d) => return Err(show_error("link", d.error.as_ref())),
            Performative::End(e) => return Err(show_error("session", e.error.as_ref())),
            Performative::Close(c) => return Err(show_error("connection", c.error.as_ref())),
            Performative::Open(_) | Performative::Begin(_) => {}
        }
        Ok(false)
    }

    /// A frame of a request: its sections on the first, its end on the last.
    fn request(
        &mut self,
        t: &Transfer,
        message: &[u8],
        message_len: u64,
        counters: &Counters,
    ) -> Result<(), Fault> {
        if let Some(id) = t.delivery_id {
            self.received = self.received.wrapping_add(1);
            self.credit_left = self.credit_left.saturating_sub(1);
            let sections = frames::sections(message).ok_or_else(|| {
                Fault("a request whose sections before the body do not parse".into())
            })?;
            let durable = match sections.header {
                Some(h) => frames::decode::<Header>(h, "header section")?.durable,
                None => false,
            };
            let properties = match sections.properties {
                Some(p) => frames::decode::<Properties>(p, "properties section")?,
                None => Properties::default(),
            };
            let asked = match sections.application_properties {
                Some(a) => reply_bytes_asked(a)?,
                None => None,
            };
            self.reading_bytes = message_len - sections.body_at as u64;
            let level = match &properties.content_encoding {
                None => None,
                Some(e) if e.0 != DEFLATE => {
                    return Err(Fault(format!(
                        "a request with content-encoding {:?}: stackbench's responder \
                         decodes {DEFLATE} only",
                        e.0
                    )))
                }
                Some(_) => {
                    if t.more || message.len() as u64 != message_len {
                        return Err(Fault(format!(
                            "a compressed request of {message_len} bytes in more than one \
                             frame or over the {} bytes kept of one: stackbench's responder \
                             decompresses a request sent as one frame",
                            frames::ENCODED_KEEP_BYTES
                        )));
                    }
                    let data = message.get(sections.body_at..).unwrap_or_default();
                    inflate_body(
                        data,
                        frames::ENCODED_KEEP_BYTES as u64 * 16,
                        false,
                        &mut self.plain,
                    )?;
                    Some(level_of(data))
                }
            };
            self.reading = Some(Request {
                unsettled: (t.settled != Some(true)).then_some(id),
                durable,
                message_id: properties.message_id,
                reply_to: properties.reply_to.unwrap_or_default(),
                reply_body: asked.unwrap_or(u64::MAX),
                body: properties
                    .content_type
                    .as_ref()
                    .map_or(AmqpBody::Zeros, |c| body_of(&c.0)),
                level,
            });
        } else {
            self.reading_bytes += message_len;
        }
        if t.more {
            return Ok(());
        }
        let Some(mut request) = self.reading.take() else {
            return Err(Fault(
                "a continuation frame without its delivery's first".into(),
            ));
        };
        if request.reply_body == u64::MAX {
            // The reply is the request's size (uncompressed).
            request.reply_body = match request.level {
                Some(_) => self.plain.len() as u64,
                None => self.reading_bytes,
            };
        }
        counters.requests.fetch_add(1, Ordering::Relaxed);
        counters
            .request_bytes
            .fetch_add(self.reading_bytes, Ordering::Relaxed);
        if self.credit_left * 2 < self.opts.credit {
            self.grant_credit()?;
        }
        if request.reply_to.is_empty() {
            return Err(Fault(
                "a request without reply-to on the request queue: a responder answers \
                 request-reply requesters only (put-get needs no responder)"
                    .into(),
            ));
        }
        self.reply(request, counters)
    }

    /// Sends the reply now if its link has credit, else queues it there
    /// (attaching the link on its first reply).
    fn reply(&mut self, request: Request, counters: &Counters) -> Result<(), Fault> {
        if !self.links.contains_key(&request.reply_to) {
            let handle = self.next_handle;
            self.next_handle += 1;
            self.attach_reply_link(handle, &request.reply_to)?;
            self.links.insert(
                request.reply_to.clone(),
                ReplyLink {
                    handle,
                    ..ReplyLink::default()
                },
            );
        }
        let link = self.links.get_mut(&request.reply_to).expect("inserted");
        if link.attached && link.credit > 0 && link.waiting.is_empty() {
            return self.send_reply(request, counters);
        }
        link.waiting.push_back(request);
        Ok(())
    }

    fn attach_reply_link(&mut self, handle: u32, address: &str) -> Result<(), Fault> {
        let attach = Attach {
            name: format!("stackbench-responder-{}-{handle}", super::connection_name()),
            handle: Handle(handle),
            role: Role::Sender,
            snd_settle_mode: SenderSettleMode::Mixed,
            rcv_settle_mode: ReceiverSettleMode::First,
            source: Some(Box::new(Source::default())),
            target: Some(Box::new(TargetArchetype::Target(Target {
                address: Some(address.to_string()),
                durable: TerminusDurability::Configuration,
                ..Target::default()
            }))),
            unsettled: None,
            incomplete_unsettled: false,
            initial_delivery_count: Some(0),
            max_message_size: None,
            offered_capabilities: None,
            desired_capabilities: None,
            properties: None,
        };
        frames::push(&mut self.out, frames::TYPE_AMQP, 0, &attach).map(drop)
    }

    /// The broker's attach of a reply link (a refused one has no target).
    fn reply_link_attached(&mut self, a: &Attach) -> Result<(), Fault> {
        let Some(link) = self.links.values_mut().find(|l| l.handle == a.handle.0) else {
            return Ok(());
        };
        if a.target.is_none() {
            return Err(Fault(format!(
                "the broker refused reply link {} (no target): may the reply queue be created?",
                a.name
            )));
        }
        link.attached = true;
        Ok(())
    }

    /// Credit for a reply link: sends what waits on it.
    fn reply_link_flow(&mut self, f: &Flow, counters: &Counters) -> Result<(), Fault> {
        let Some(handle) = f.handle.as_ref() else {
            return Ok(());
        };
        let Some(address) = self
            .links
            .iter()
            .find(|(_, l)| l.handle == handle.0)
            .map(|(a, _)| a.clone())
        else {
            return Ok(());
        };
        loop {
            let link = self.links.get_mut(&address).expect("found");
            let count = f.delivery_count.unwrap_or(0);
            let credit = f.link_credit.unwrap_or(0);
            link.credit = count.wrapping_add(credit).wrapping_sub(link.sent);
            if !link.attached || link.credit == 0 {
                return Ok(());
            }
            let Some(request) = link.waiting.pop_front() else {
                return Ok(());
            };
            // The credit left is recomputed from the flow after each send.
            self.send_reply(request, counters)?;
        }
    }

    /// Writes a reply's transfer (and its body) to the output.
    fn send_reply(&mut self, request: Request, counters: &Counters) -> Result<(), Fault> {
        let link = self.links.get_mut(&request.reply_to).expect("attached");
        let handle = link.handle;
        link.sent = link.sent.wrapping_add(1);
        link.credit -= 1;
        let delivery_id = self.next_delivery_id;
        self.next_delivery_id = delivery_id.wrapping_add(1);
        self.next_outgoing_id = self.next_outgoing_id.wrapping_add(1);
        let transfer = Transfer {
            handle: Handle(handle),
            delivery_id: Some(delivery_id),
            delivery_tag: Some(Binary::from(u64::from(delivery_id).to_be_bytes().to_vec())),
            message_format: Some(0),
            settled: Some(!request.durable),
            more: false,
            rcv_settle_mode: None,
            state: None,
            resume: false,
            aborted: false,
            batchable: false,
        };
        let start = frames::push(&mut self.out, frames::TYPE_AMQP, 0, &transfer)?;
        if request.durable {
            let header = Header {
                durable: true,
                ..Header::default()
            };
            frames::push_value(&mut self.out, start, &header)?;
        }
        let properties = Properties {
            correlation_id: request.message_id.clone(),
            content_type: content_type(request.body).map(Symbol::from),
            content_encoding: request.level.map(|_| Symbol::from(DEFLATE)),
            ..Properties::default()
        };
        frames::push_value(&mut self.out, start, &properties)?;
        if let Some(level) = request.level {
            let len = usize::try_from(request.reply_body)
                .map_err(|_| Fault(format!("a reply body of {} bytes", request.reply_body)))?;
            self.packed.clear();
            deflate_body(request.body, len, level, &mut self.plain, &mut self.packed);
        }
        let moved = match request.level {
            Some(_) => self.packed.len() as u64,
            None => request.reply_body,
        };
        let body = u32::try_from(moved).map_err(|_| {
            Fault(format!(
                "a reply body of {} bytes: AMQP sizes a frame in 32 bits",
                request.reply_body
            ))
        })?;
        frames::push_data_head(&mut self.out, start, body);
        let frame = (self.out.len() - start) as u64 + moved;
        if frame > u64::from(self.peer_max_frame) {
            return Err(Fault(format!(
                "a reply of {} bytes (a frame of {frame}) is over the broker's max-frame-size \
                 {}: stackbench sends a message as one frame",
                request.reply_body, self.peer_max_frame
            )));
        }
        if request.level.is_some() {
            self.out.extend_from_slice(&self.packed);
        } else {
            let at = self.out.len();
            self.out.resize(at + request.reply_body as usize, 0);
            fill_body(request.body, 0, &mut self.out[at..]);
        }
        counters.replies.fetch_add(1, Ordering::Relaxed);
        counters.reply_bytes.fetch_add(moved, Ordering::Relaxed);
        match (request.durable, request.unsettled) {
            (true, _) => {
                self.unaccepted.insert(delivery_id, request);
            }
            (false, Some(id)) => self.accept(id)?,
            (false, None) => {}
        }
        Ok(())
    }

    /// The broker settling durable replies: each accepted one's request is
    /// accepted in turn (taken off the request queue).
    fn replies_settled(&mut self, d: &Disposition) -> Result<(), Fault> {
        if d.role != Role::Receiver {
            return Ok(());
        }
        let last = d.last.unwrap_or(d.first);
        let mut id = d.first;
        loop {
            if let Some(request) = self.unaccepted.remove(&id) {
                match &d.state {
                    Some(DeliveryState::Accepted(_)) | None => {
                        if let Some(request_id) = request.unsettled {
                            self.accept(request_id)?;
                        }
                    }
                    Some(other) => {
                        return Err(Fault(format!(
                            "the broker did not accept a reply to {}: {other:?}",
                            request.reply_to
                        )))
                    }
                }
            }
            if id == last {
                return Ok(());
            }
            id = id.wrapping_add(1);
        }
    }

    /// Accepts (and settles) the request delivered as `id`.
    fn accept(&mut self, id: u32) -> Result<(), Fault> {
        let accept = Disposition {
            role: Role::Receiver,
            first: id,
            last: None,
            settled: true,
            state: Some(DeliveryState::Accepted(Accepted {})),
            batchable: false,
        };
        frames::push(&mut self.out, frames::TYPE_AMQP, 0, &accept).map(drop)
    }
}

/// The reply size a request asks for: its `z` application property (a
/// ulong), `None` when it names none.
fn reply_bytes_asked(encoded: &[u8]) -> Result<Option<u64>, Fault> {
    let properties: ApplicationProperties =
        frames::decode(encoded, "application-properties section")?;
    Ok(match properties.0.get(super::REPLY_BYTES_KEY) {
        Some(SimpleValue::Ulong(n)) => Some(*n),
        Some(SimpleValue::Uint(n)) => Some(u64::from(*n)),
        Some(SimpleValue::Long(n)) => u64::try_from(*n).ok(),
        _ => None,
    })
}
