//! The driver's half of AMQP 1.0: a client connection's state machine,
//! from the SASL header to its last transaction (see the module above).

use fe2o3_amqp_types::definitions::{Handle, ReceiverSettleMode, Role, SenderSettleMode};
use fe2o3_amqp_types::messaging::{
    DeliveryState, MessageId, Properties, Source, Target, TargetArchetype, TerminusDurability,
};
use fe2o3_amqp_types::performatives::{
    Attach, Begin, ChannelMax, Disposition, Flow, MaxFrameSize, Open, Performative,
};
use stackbench_model::{AmqpParams, AmqpPattern, AmqpQueues, AppProtocol};

use super::frames::{self, In, Reader};
use super::sasl;
use super::{
    connection_name, content_type, deflate_body, fill_message, inflate_body, show_error, DEFLATE,
    MAX_FRAME_BYTES, SESSION_WINDOW,
};
use crate::app::{ClassShape, Codec, Fault, Setup};

/// Our handles: the sending (request) link and the receiving (reply) link.
const SEND: u32 = 0;
const RECEIVE: u32 = 1;

/// The driver's half: the class's body sizes and the run's settings.
#[derive(Debug, Clone)]
pub struct Client {
    request_body: u64,
    reply_body: u64,
    params: AmqpParams,
}

/// What the setup has seen, one bit each.
const GOT_OUTCOME: u8 = 1;
const GOT_OPEN: u8 = 2;
const GOT_BEGIN: u8 = 4;
const GOT_SEND_ATTACH: u8 = 8;
const GOT_RECEIVE_ATTACH: u8 = 16;
const SET_UP: u8 = 31;

/// One connection: its frame reader, what it sends next, its links'
/// counters and the transaction in flight.
#[derive(Debug, Default)]
pub struct ClientState {
    reader: Reader,
    /// Setup bytes to send.
    setup: Vec<u8>,
    /// The next request's bytes before its body.
    head: Vec<u8>,
    /// This connection's request transfer up to its body, encoded once
    /// (empty until the first request), and where its per-message fields
    /// are: each request copies it and patches them.
    template: Vec<u8>,
    template_at: frames::TemplateAt,
    /// The body length the template frames (compressed bodies vary).
    template_body: u32,
    /// Compression: scratch for an uncompressed body (a request's, a
    /// reply's) and the next request's compressed body.
    plain: Vec<u8>,
    packed: Vec<u8>,
    got: u8,
    /// Names of this connection's queues and links.
    name: String,
    peer_max_frame: u32,
    /// The peer's handles of our two links.
    peer_send_handle: Option<u32>,
    peer_receive_handle: Option<u32>,
    /// Session: our next transfer id, the peer's next one.
    next_outgoing_id: u32,
    next_incoming_id: u32,
    /// Sending link: deliveries sent (the delivery count) and credit left.
    sent: u32,
    send_credit: u32,
    /// Receiving link: deliveries received and credit left for the peer.
    received: u32,
    receive_credit: u32,
    /// The transaction in flight: the message id sent, whether its reply
    /// has all arrived and its put was accepted (true when not persistent).
    message_id: u64,
    reply_done: bool,
    accepted: bool,
    /// A reply to accept with the next request (persistent).
    unsettled_reply: Option<u32>,
}

impl Codec for Client {
    const FRAMED: bool = true;
    const PROTOCOL: AppProtocol = AppProtocol::Amqp;
    const SETUP: bool = true;
    type State = ClientState;

    fn of(shape: &ClassShape) -> Client {
        let request_body = shape.request_bytes;
        let reply_body = match shape.amqp.pattern {
            AmqpPattern::RequestReply => shape.response_bytes,
            AmqpPattern::PutGet => shape.request_bytes,
        };
        Client {
            request_body,
            reply_body,
            params: shape.amqp.clone(),
        }
    }

    /// The body: the frames in front of it are the connection's
    /// ([`Codec::request_len`]).
    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request_body
    }

    #[inline]
    fn request_len(&self, state: &ClientState) -> u64 {
        state.head.len() as u64 + self.streamed_body()
    }

    #[inline]
    fn fill_request(&self, state: &ClientState, offset: u64, out: &mut [u8]) {
        fill_message(&state.head, self.params.body, offset, out);
    }

    /// A reply's body and a transfer's frame around it.
    #[inline]
    fn response_bytes(&self) -> u64 {
        self.reply_body + 64
    }

    fn response_left(
        &self,
        state: &mut ClientState,
        _remaining: u64,
        _n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault> {
        let mut reader = std::mem::take(&mut state.reader);
        let fed = reader.feed(chunk, |input| match input {
            In::Header(h) => Err(Fault(format!(
                "a protocol header ({}) in the middle of a connection",
                frames::show_header(&h)
            ))),
            In::Frame { kind, kept, .. } => {
                if kind != frames::TYPE_AMQP {
                    return Err(Fault("a SASL frame after the connection was open".into()));
                }
                if !kept.is_empty() {
                    self.frame(state, kept)?;
                }
                Ok(false)
            }
        });
        state.reader = reader;
        fed?;
        if state.reply_done && state.accepted && state.send_credit > 0 {
            state.reader.shrink();
            self.prepare_request(state)?;
            return Ok(0);
        }
        Ok(state.reader.due())
    }

    /// The client speaks first: the SASL header.
    fn setup_open(&self, state: &mut ClientState) -> Setup {
        *state = ClientState {
            reader: Reader::expecting_header(),
            name: connection_name(),
            ..ClientState::default()
        };
        state.setup.extend_from_slice(&frames::SASL_HEADER);
        Setup::Send
    }

    fn setup_received(&self, state: &mut ClientState, chunk: &[u8]) -> Result<Setup, Fault> {
        state.setup.clear();
        let mut reader = std::mem::take(&mut state.reader);
        let fed = reader.feed(chunk, |input| self.setup_input(state, input));
        state.reader = reader;
        fed?;
        if state.got == SET_UP && state.send_credit > 0 {
            // A logged-on connection keeps no setup buffer (at 256K users).
            state.setup = Vec::new();
            state.reader.shrink();
            self.prepare_request(state)?;
            return Ok(Setup::Done);
        }
        Ok(if state.setup.is_empty() {
            Setup::Read
        } else {
            Setup::Send
        })
    }

    #[inline]
    fn setup_bytes(&self, state: &ClientState) -> u64 {
        state.setup.len() as u64
    }

    #[inline]
    fn fill_setup(&self, state: &ClientState, offset: u64, out: &mut [u8]) {
        super::fill_from(&state.setup, offset, out);
    }
}

impl ClientState {
    /// The connection's name (in its queues' and links' names).
    #[cfg(test)]
    pub(super) fn name(&self) -> &str {
        &self.name
    }
}

impl Client {
    /// The request body's bytes streamed after `state.head`: none when
    /// compressed (the compressed body is in the head).
    fn streamed_body(&self) -> u64 {
        match self.params.compress.zlib_level() {
            Some(_) => 0,
            None => self.request_body,
        }
    }

    /// The request queue's address, and the reply queue's.
    fn addresses(&self, name: &str) -> (String, String) {
        let q = &self.params.queue;
        let request = match self.params.queues {
            AmqpQueues::PerClient => format!("{q}.request.{name}"),
            AmqpQueues::Shared => format!("{q}.request"),
        };
        let reply = match self.params.pattern {
            AmqpPattern::RequestReply => format!("{q}.reply.{name}"),
            AmqpPattern::PutGet => request.clone(),
        };
        (request, reply)
    }

    /// One input during setup: a header, a SASL frame or an AMQP frame.
    fn setup_input(&self, state: &mut ClientState, input: In<'_>) -> Result<bool, Fault> {
        match input {
            In::Header(h) if state.got & GOT_OUTCOME == 0 => {
                frames::check_header(&h, &frames::SASL_HEADER)?;
                Ok(false)
            }
            In::Header(h) => {
                frames::check_header(&h, &frames::AMQP_HEADER)?;
                Ok(false)
            }
            In::Frame { kind, kept, .. } if kind == frames::TYPE_SASL => self.sasl(state, kept),
            In::Frame { kept: [], .. } => Ok(false),
            In::Frame { kept, .. } => {
                self.frame(state, kept)?;
                Ok(false)
            }
        }
    }

    /// A SASL frame: mechanisms (answered with the init and the whole
    /// AMQP opening, pipelined) or the outcome (the AMQP header is next).
    fn sasl(&self, state: &mut ClientState, kept: &[u8]) -> Result<bool, Fault> {
        let login = self
            .params
            .user
            .as_deref()
            .map(|user| (user, self.params.password.as_deref().unwrap_or("")));
        match sasl::answer(kept, login, "the broker")? {
            Some(init) => {
                frames::push(&mut state.setup, frames::TYPE_SASL, 0, &init)?;
                state.setup.extend_from_slice(&frames::AMQP_HEADER);
                self.push_opening(state)?;
                Ok(false)
            }
            None => {
                state.got |= GOT_OUTCOME;
                Ok(true)
            }
        }
    }

    /// Appends open, begin, both attaches and the receiving link's flow.
    fn push_opening(&self, state: &mut ClientState) -> Result<(), Fault> {
        let out = &mut state.setup;
        let open = Open {
            container_id: format!("stackbench-{}", state.name),
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
        frames::push(out, frames::TYPE_AMQP, 0, &open)?;
        let begin = Begin {
            remote_channel: None,
            next_outgoing_id: 0,
            incoming_window: SESSION_WINDOW,
            outgoing_window: SESSION_WINDOW,
            handle_max: Handle(RECEIVE),
            offered_capabilities: None,
            desired_capabilities: None,
            properties: None,
        };
        frames::push(out, frames::TYPE_AMQP, 0, &begin)?;
        let (request, reply) = self.addresses(&state.name);
        let persistent = self.params.persistent;
        let settle = if persistent {
            SenderSettleMode::Unsettled
        } else {
            SenderSettleMode::Settled
        };
        for (handle, role, address) in [
            (SEND, Role::Sender, request),
            (RECEIVE, Role::Receiver, reply),
        ] {
            let verb = if role == Role::Sender { "put" } else { "get" };
            let sender = role == Role::Sender;
            let attach = Attach {
                name: format!("stackbench-{}-{verb}", state.name),
                handle: Handle(handle),
                role,
                snd_settle_mode: settle.clone(),
                rcv_settle_mode: ReceiverSettleMode::First,
                // Durable termini: a broker that declares the queues
                // (RabbitMQ's `/queue/NAME`) declares them durable, as MQ's
                // queues are defined, whatever the messages' persistence.
                source: Some(Box::new(Source {
                    address: (!sender).then(|| address.clone()),
                    durable: TerminusDurability::Configuration,
                    ..Source::default()
                })),
                target: Some(Box::new(TargetArchetype::Target(Target {
                    address: sender.then_some(address),
                    durable: TerminusDurability::Configuration,
                    ..Target::default()
                }))),
                unsettled: None,
                incomplete_unsettled: false,
                initial_delivery_count: sender.then_some(0),
                max_message_size: None,
                offered_capabilities: None,
                desired_capabilities: None,
                properties: None,
            };
            frames::push(out, frames::TYPE_AMQP, 0, &attach)?;
        }
        state.receive_credit = self.params.credit;
        let flow = receive_flow(state, self.params.credit);
        frames::push(&mut state.setup, frames::TYPE_AMQP, 0, &flow).map(drop)
    }

    /// One AMQP frame, during setup or after it. A transfer (every reply)
    /// is read in place; the rest are decoded.
    fn frame(&self, state: &mut ClientState, kept: &[u8]) -> Result<(), Fault> {
        if let Some((head, len)) = frames::transfer_head(kept) {
            return self.transfer(state, head, &kept[len..]);
        }
        let (performative, len) = frames::performative(kept)?;
        match performative {
            Performative::Open(open) => {
                state.peer_max_frame = open.max_frame_size.0;
                state.got |= GOT_OPEN;
            }
            Performative::Begin(begin) => {
                state.next_incoming_id = begin.next_outgoing_id;
                state.got |= GOT_BEGIN;
            }
            Performative::Attach(attach) => self.attached(state, &attach)?,
            Performative::Flow(flow) => {
                if flow.handle.map(|h| h.0) == state.peer_send_handle {
                    let count = flow.delivery_count.unwrap_or(0);
                    let credit = flow.link_credit.unwrap_or(0);
                    state.send_credit = count.wrapping_add(credit).wrapping_sub(state.sent);
                }
            }
            Performative::Transfer(t) => {
                let head = frames::TransferHead {
                    handle: t.handle.0,
                    delivery_id: t.delivery_id,
                    settled: t.settled,
                    more: t.more,
                };
                self.transfer(state, head, &kept[len..])?;
            }
            Performative::Disposition(d) => settled(state, &d)?,
            Performative::Detach(d) => return Err(show_error("link", d.error.as_ref())),
            Performative::End(e) => return Err(show_error("session", e.error.as_ref())),
            Performative::Close(c) => return Err(show_error("connection", c.error.as_ref())),
        }
        Ok(())
    }

    /// The broker's attach of one of our links: a refused link has no
    /// terminus (a detach with the reason follows).
    fn attached(&self, state: &mut ClientState, attach: &Attach) -> Result<(), Fault> {
        // The peer's role is the other end's: receiver of our sending link.
        let (ours, bit) = match attach.role {
            Role::Receiver => (&mut state.peer_send_handle, GOT_SEND_ATTACH),
            Role::Sender => (&mut state.peer_receive_handle, GOT_RECEIVE_ATTACH),
        };
        let refused = match attach.role {
            Role::Receiver => attach.target.is_none(),
            Role::Sender => attach.source.is_none(),
        };
        if refused {
            return Err(Fault(format!(
                "the broker refused link {} (no {}): does the queue exist, or may it be \
                 created?",
                attach.name,
                if attach.role == Role::Receiver {
                    "target"
                } else {
                    "source"
                }
            )));
        }
        *ours = Some(attach.handle.0);
        state.got |= bit;
        Ok(())
    }

    /// A transfer on the receiving link: the reply, or a frame of it.
    fn transfer(
        &self,
        state: &mut ClientState,
        transfer: frames::TransferHead,
        message: &[u8],
    ) -> Result<(), Fault> {
        if Some(transfer.handle) != state.peer_receive_handle {
            return Err(Fault(format!(
                "a transfer on link handle {} before the reply link was attached",
                transfer.handle
            )));
        }
        state.next_incoming_id = state.next_incoming_id.wrapping_add(1);
        if let Some(id) = transfer.delivery_id {
            // The first frame of a delivery: its sections are here.
            state.received = state.received.wrapping_add(1);
            state.receive_credit = state.receive_credit.saturating_sub(1);
            if transfer.settled != Some(true) {
                state.unsettled_reply = Some(id);
            }
            self.check_reply(state, message)?;
            self.inflate_reply(state, message, transfer.more)?;
        }
        if !transfer.more {
            state.reply_done = true;
        }
        Ok(())
    }

    /// Decompresses a reply that names a content-encoding (all of it in
    /// this frame, kept whole by the reader), checking its size.
    fn inflate_reply(
        &self,
        state: &mut ClientState,
        message: &[u8],
        more: bool,
    ) -> Result<(), Fault> {
        let Some(sections) = frames::sections(message) else {
            return Ok(());
        };
        if !sections.properties.is_some_and(frames::properties_encoded) {
            return Ok(());
        }
        let properties: Properties = frames::decode(
            sections.properties.unwrap_or_default(),
            "properties section",
        )?;
        let encoding = properties.content_encoding.map(|e| e.0).unwrap_or_default();
        if encoding != DEFLATE {
            return Err(Fault(format!(
                "a reply with content-encoding {encoding:?}: stackbench decodes {DEFLATE} only"
            )));
        }
        if more {
            return Err(Fault(
                "a compressed reply in more than one transfer frame: stackbench decompresses \
                 a reply sent as one frame"
                    .into(),
            ));
        }
        let data = message.get(sections.body_at..).unwrap_or_default();
        inflate_body(data, self.reply_body, true, &mut state.plain)
    }

    /// Whether the reply answers the request: its correlation id (put-get:
    /// its message id) is the request's message id.
    fn check_reply(&self, state: &ClientState, message: &[u8]) -> Result<(), Fault> {
        let Some(properties) = frames::sections(message).and_then(|s| s.properties) else {
            return Err(Fault(
                "a reply without a properties section (no correlation id) in its first frame"
                    .into(),
            ));
        };
        // A shared queue's put-get may get another client's message.
        if self.params.queues == AmqpQueues::Shared && self.params.pattern == AmqpPattern::PutGet {
            return Ok(());
        }
        // Properties field 5 is the correlation id, field 0 the message id.
        let index = match self.params.pattern {
            AmqpPattern::RequestReply => 5,
            AmqpPattern::PutGet => 0,
        };
        let want = MessageId::Ulong(state.message_id);
        let id = match frames::properties_ulong(properties, index) {
            // A ulong id (stackbench's own), read in place.
            Some(id) => id.map(MessageId::Ulong),
            None => {
                let properties: Properties = frames::decode(properties, "properties section")?;
                match self.params.pattern {
                    AmqpPattern::RequestReply => properties.correlation_id,
                    AmqpPattern::PutGet => properties.message_id,
                }
            }
        };
        if id.as_ref() != Some(&want) {
            return Err(Fault(format!(
                "a reply with {} {id:?} to message {}: not this request's (another \
                 client's reply on this reply queue?)",
                match self.params.pattern {
                    AmqpPattern::RequestReply => "correlation id",
                    AmqpPattern::PutGet => "message id",
                },
                state.message_id
            )));
        }
        Ok(())
    }

    /// Writes the next request's frames up to its body into `state.head`:
    /// what the connection owes (a disposition, a flow), then the transfer
    /// — the connection's template with this message's ids patched in.
    fn prepare_request(&self, state: &mut ClientState) -> Result<(), Fault> {
        state.head.clear();
        if let Some(id) = state.unsettled_reply.take() {
            frames::push_accept(&mut state.head, id);
        }
        if state.receive_credit * 2 < self.params.credit || state.receive_credit == 0 {
            state.receive_credit = self.params.credit;
            let flow = receive_flow(state, self.params.credit);
            frames::push(&mut state.head, frames::TYPE_AMQP, 0, &flow)?;
        }
        let body_bytes = match self.params.compress.zlib_level() {
            Some(level) => {
                let len = usize::try_from(self.request_body)
                    .map_err(|_| Fault(format!("a body of {} bytes", self.request_body)))?;
                let mut packed = std::mem::take(&mut state.packed);
                packed.clear();
                deflate_body(self.params.body, len, level, &mut state.plain, &mut packed);
                state.packed = packed;
                state.packed.len() as u64
            }
            None => self.request_body,
        };
        if state.template.is_empty() || u64::from(state.template_body) != body_bytes {
            self.build_template(state, body_bytes)?;
        }
        state.message_id += 1;
        let base = state.head.len();
        state.head.extend_from_slice(&state.template);
        frames::patch(
            &mut state.head,
            base,
            &state.template_at,
            state.sent,
            state.message_id,
        );
        if self.params.compress.zlib_level().is_some() {
            state.head.extend_from_slice(&state.packed);
        }
        state.sent = state.sent.wrapping_add(1);
        state.send_credit -= 1;
        state.next_outgoing_id = state.next_outgoing_id.wrapping_add(1);
        state.reply_done = false;
        state.accepted = !self.params.persistent;
        Ok(())
    }

    /// Encodes the connection's request transfer for a body of
    /// `body_bytes` (once; again when a compressed body's size changes),
    /// checking that a message fits the broker's max-frame-size.
    fn build_template(&self, state: &mut ClientState, body_bytes: u64) -> Result<(), Fault> {
        let body = u32::try_from(body_bytes).map_err(|_| {
            Fault(format!(
                "a message body of {body_bytes} bytes: AMQP sizes a frame in 32 bits"
            ))
        })?;
        let request_reply = self.params.pattern == AmqpPattern::RequestReply;
        let reply_to = request_reply.then(|| self.addresses(&state.name).1);
        let persistent = self.params.persistent;
        let shape = frames::TransferShape {
            handle: SEND,
            settled: !persistent,
            durable: persistent,
            reply_to: reply_to.as_deref(),
            content_type: content_type(self.params.body),
            content_encoding: self.params.compress.zlib_level().map(|_| DEFLATE),
            reply_bytes: request_reply.then_some(self.reply_body),
            body_bytes: body,
        };
        let mut template = Vec::new();
        state.template_at = frames::transfer_template(&mut template, &shape);
        let frame = template.len() as u64 + body_bytes;
        if frame > u64::from(state.peer_max_frame) {
            return Err(Fault(format!(
                "a message of {} bytes (a frame of {frame}) is over the broker's \
                 max-frame-size {}: stackbench sends a message as one frame, so use a \
                 smaller size",
                self.request_body, state.peer_max_frame
            )));
        }
        state.template = template;
        state.template_body = body;
        Ok(())
    }
}

/// A flow granting the receiving link `credit`, with the session's state.
fn receive_flow(state: &ClientState, credit: u32) -> Flow {
    Flow {
        next_incoming_id: Some(state.next_incoming_id),
        incoming_window: SESSION_WINDOW,
        next_outgoing_id: state.next_outgoing_id,
        outgoing_window: SESSION_WINDOW,
        handle: Some(Handle(RECEIVE)),
        delivery_count: Some(state.received),
        link_credit: Some(credit),
        available: None,
        drain: false,
        echo: false,
        properties: None,
    }
}

/// The broker's disposition of our puts: the one in flight accepted, or a
/// fault naming what it said instead.
fn settled(state: &mut ClientState, d: &Disposition) -> Result<(), Fault> {
    if d.role != Role::Receiver {
        return Ok(());
    }
    let in_flight = state.sent.wrapping_sub(1);
    let last = d.last.unwrap_or(d.first);
    if in_flight.wrapping_sub(d.first) > last.wrapping_sub(d.first) {
        return Ok(());
    }
    match &d.state {
        Some(DeliveryState::Accepted(_)) => {
            state.accepted = true;
            Ok(())
        }
        Some(other) => Err(Fault(format!(
            "the broker did not accept message {}: {other:?}",
            state.message_id
        ))),
        None if d.settled => {
            state.accepted = true;
            Ok(())
        }
        None => Ok(()),
    }
}
