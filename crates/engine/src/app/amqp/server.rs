//! The responder's half of AMQP 1.0: a minimal in-memory broker and
//! responder application in one. It logs any client in (ANONYMOUS or
//! PLAIN), attaches whatever links it asks for, grants credit, and answers
//! each message put on the client's sending link with one on its receiving
//! link: the z-byte reply, its correlation id the request's message id, or
//! (put-get: the receiving link reads the queue the sending link writes)
//! the message itself. A persistent (unsettled) put is accepted with a
//! disposition before the reply; nothing is stored, so no queue outlives
//! its connection (each connection is its own broker).

use fe2o3_amqp_types::definitions::{Handle, ReceiverSettleMode, Role};
use fe2o3_amqp_types::messaging::{
    Accepted, DeliveryState, Header, MessageId, Properties, TargetArchetype,
};
use fe2o3_amqp_types::performatives::{
    Attach, Begin, ChannelMax, Disposition, Flow, MaxFrameSize, Open, Performative, Transfer,
};
use fe2o3_amqp_types::sasl::{SaslCode, SaslInit, SaslMechanisms, SaslOutcome};
use serde_amqp::primitives::{Array, Binary, Symbol};
use stackbench_model::settings::Tn3270Options;
use stackbench_model::AmqpBody;

use super::frames::{self, In, Reader};
use super::{
    body_of, content_type, deflate_body, fill_message, inflate_body, level_of, show_error,
    BROKER_CREDIT, DEFLATE, MAX_FRAME_BYTES, SESSION_WINDOW,
};
use crate::app::{Fault, Handler, Setup};

/// Our handles: the link the client puts on, and the one it gets from.
const PUTS: u32 = 0;
const GETS: u32 = 1;

/// The responder's half: the test's reply body size.
#[derive(Debug, Clone, Copy)]
pub struct Server {
    request_body: u64,
    reply_body: u64,
}

/// Where a connection's opening is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The SASL header is due.
    #[default]
    SaslHeader,
    /// sasl-init is due.
    SaslInit,
    /// The AMQP header, open, begin, the attaches and a flow are due.
    Opening,
    /// Transactions.
    Open,
}

/// One connection: its reader, its opening, its links and the answer to
/// the request just read.
#[derive(Debug, Default)]
pub struct ServerState {
    reader: Reader,
    step: Step,
    /// Setup bytes to send, or the answer's bytes before its body.
    out: Vec<u8>,
    client_max_frame: u32,
    /// The client's handles of its putting and getting links, and their
    /// addresses (the target it puts to, the source it gets from).
    puts_handle: Option<u32>,
    gets_handle: Option<u32>,
    put_address: String,
    get_address: String,
    /// Session: our next transfer id and the client's next.
    next_outgoing_id: u32,
    next_incoming_id: u32,
    /// Putting link: deliveries received, credit left.
    puts: u32,
    puts_credit: u32,
    /// Getting link: deliveries sent, credit the client granted.
    gets: u32,
    gets_credit: u32,
    /// The request read: its body length, whether it was sent unsettled
    /// (and its delivery id), its message id and body kind.
    request_body: u64,
    request_unsettled: Option<u32>,
    request_durable: bool,
    message_id: Option<MessageId>,
    body: AmqpBody,
    /// A request completed in the chunk being read.
    complete: bool,
    /// The answer's body length (streamed after `out`; none when the
    /// answer is compressed: its body is in `out`).
    answer_body: u64,
    /// The request's body was compressed (content-encoding deflate), at a
    /// zlib level of about `level`; the answer is compressed alike.
    encoded: bool,
    level: u32,
    /// Compression: an uncompressed body's scratch, and the compressed
    /// answer body (put-get: the request's, passed back as a broker does).
    plain: Vec<u8>,
    packed: Vec<u8>,
}

impl Handler for Server {
    const FRAMED: bool = true;
    const SETUP: bool = true;
    type State = ServerState;

    /// (TN3270's options are not AMQP's: ignored.)
    fn of(request_bytes: u64, response_bytes: u64, _: &Tn3270Options) -> Server {
        Server {
            request_body: request_bytes,
            reply_body: response_bytes,
        }
    }

    /// A request's body and a transfer's frame around it.
    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request_body + 64
    }

    fn request_left(
        &self,
        state: &mut ServerState,
        _remaining: u64,
        _n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault> {
        state.complete = false;
        let mut reader = std::mem::take(&mut state.reader);
        let fed = reader.feed(chunk, |input| match input {
            In::Header(h) => Err(Fault(format!(
                "a protocol header ({}) in the middle of a connection",
                frames::show_header(&h)
            ))),
            In::Frame { kind, .. } if kind != frames::TYPE_AMQP => {
                Err(Fault("a SASL frame after the connection was open".into()))
            }
            In::Frame { kept, len, .. } => {
                if !kept.is_empty() {
                    self.frame(state, kept, len)?;
                }
                Ok(false)
            }
        });
        state.reader = reader;
        fed?;
        if state.complete {
            state.reader.shrink();
            self.prepare_answer(state)?;
            return Ok(0);
        }
        Ok(state.reader.due())
    }

    #[inline]
    fn response_bytes(&self, state: &ServerState) -> u64 {
        state.out.len() as u64 + state.answer_body
    }

    #[inline]
    fn fill_response(&self, state: &ServerState, offset: u64, out: &mut [u8]) {
        fill_message(&state.out, state.body, offset, out);
    }

    /// The client speaks first.
    fn setup_open(&self, state: &mut ServerState) -> Setup {
        *state = ServerState {
            reader: Reader::expecting_header(),
            body: AmqpBody::Zeros,
            ..ServerState::default()
        };
        Setup::Read
    }

    fn setup_received(&self, state: &mut ServerState, chunk: &[u8]) -> Result<Setup, Fault> {
        state.out.clear();
        let mut reader = std::mem::take(&mut state.reader);
        let fed = reader.feed(chunk, |input| self.setup_input(state, input));
        state.reader = reader;
        fed?;
        let linked = state.puts_handle.is_some() && state.gets_handle.is_some();
        if state.step == Step::Opening && linked && state.gets_credit > 0 {
            state.step = Step::Open;
            return Ok(Setup::SendLast);
        }
        Ok(if state.out.is_empty() {
            Setup::Read
        } else {
            Setup::Send
        })
    }

    #[inline]
    fn setup_bytes(&self, state: &ServerState) -> u64 {
        state.out.len() as u64
    }

    #[inline]
    fn fill_setup(&self, state: &ServerState, offset: u64, out: &mut [u8]) {
        super::fill_from(&state.out, offset, out);
    }
}

impl Server {
    /// One input during setup.
    fn setup_input(&self, state: &mut ServerState, input: In<'_>) -> Result<bool, Fault> {
        match (state.step, input) {
            (Step::SaslHeader, In::Header(h)) => {
                frames::check_header(&h, &frames::SASL_HEADER)?;
                state.out.extend_from_slice(&frames::SASL_HEADER);
                let mechanisms = SaslMechanisms {
                    sasl_server_mechanisms: Array(vec![
                        Symbol::from("ANONYMOUS"),
                        Symbol::from("PLAIN"),
                    ]),
                };
                frames::push(&mut state.out, frames::TYPE_SASL, 0, &mechanisms)?;
                state.step = Step::SaslInit;
                Ok(false)
            }
            (Step::SaslInit, In::Frame { kind, kept, .. }) if kind == frames::TYPE_SASL => {
                if frames::descriptor(kept) != Some(frames::SASL_INIT) {
                    return Err(Fault(
                        "a SASL frame other than sasl-init from the client".into(),
                    ));
                }
                let init: SaslInit = frames::decode(kept, "sasl-init")?;
                let known = matches!(init.mechanism.0.as_str(), "ANONYMOUS" | "PLAIN");
                let outcome = SaslOutcome {
                    code: if known { SaslCode::Ok } else { SaslCode::Auth },
                    additional_data: None,
                };
                frames::push(&mut state.out, frames::TYPE_SASL, 0, &outcome)?;
                if !known {
                    return Err(Fault(format!(
                        "the client chose SASL {}: this broker offers ANONYMOUS and PLAIN",
                        init.mechanism.0
                    )));
                }
                state.step = Step::Opening;
                Ok(true)
            }
            (Step::Opening, In::Header(h)) => {
                frames::check_header(&h, &frames::AMQP_HEADER)?;
                state.out.extend_from_slice(&frames::AMQP_HEADER);
                Ok(false)
            }
            (
                Step::Opening,
                In::Frame {
                    kind, kept, len, ..
                },
            ) if kind == frames::TYPE_AMQP => {
                if !kept.is_empty() {
                    self.frame(state, kept, len)?;
                }
                Ok(false)
            }
            (_, In::Header(h)) => Err(Fault(format!(
                "an unexpected protocol header {} from the client",
                frames::show_header(&h)
            ))),
            (_, In::Frame { .. }) => Err(Fault(
                "a frame before the client's SASL login: not an AMQP 1.0 client".into(),
            )),
        }
    }

    /// One AMQP frame from the client.
    fn frame(&self, state: &mut ServerState, kept: &[u8], len: u64) -> Result<(), Fault> {
        let (performative, at) = frames::performative(kept)?;
        match performative {
            Performative::Open(open) => {
                state.client_max_frame = open.max_frame_size.0;
                let ours = Open {
                    container_id: "stackbench-serve".to_string(),
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
                frames::push(&mut state.out, frames::TYPE_AMQP, 0, &ours)?;
            }
            Performative::Begin(begin) => {
                state.next_incoming_id = begin.next_outgoing_id;
                let ours = Begin {
                    remote_channel: Some(0),
                    next_outgoing_id: 0,
                    incoming_window: SESSION_WINDOW,
                    outgoing_window: SESSION_WINDOW,
                    handle_max: Handle(GETS),
                    offered_capabilities: None,
                    desired_capabilities: None,
                    properties: None,
                };
                frames::push(&mut state.out, frames::TYPE_AMQP, 0, &ours)?;
            }
            Performative::Attach(attach) => self.attach(state, attach)?,
            Performative::Flow(flow) => {
                if flow.handle.is_some() && flow.handle.map(|h| h.0) == state.gets_handle {
                    let count = flow.delivery_count.unwrap_or(0);
                    let credit = flow.link_credit.unwrap_or(0);
                    state.gets_credit = count.wrapping_add(credit).wrapping_sub(state.gets);
                }
            }
            Performative::Transfer(t) => {
                let message = &kept[at..];
                self.transfer(state, &t, message, len - at as u64)?;
            }
            // The client settling replies: nothing is kept to release.
            Performative::Disposition(_) => {}
            Performative::Detach(d) => return Err(show_error("link", d.error.as_ref())),
            Performative::End(e) => return Err(show_error("session", e.error.as_ref())),
            Performative::Close(c) => return Err(show_error("connection", c.error.as_ref())),
        }
        Ok(())
    }

    /// The client attaches a link: attach our end, and grant a putting
    /// link credit.
    fn attach(&self, state: &mut ServerState, attach: Attach) -> Result<(), Fault> {
        let (handle, role) = match attach.role {
            Role::Sender => {
                state.puts_handle = Some(attach.handle.0);
                state.put_address = match attach.target.as_deref() {
                    Some(TargetArchetype::Target(t)) => t.address.clone().unwrap_or_default(),
                    _ => String::new(),
                };
                state.puts = attach.initial_delivery_count.unwrap_or(0);
                (PUTS, Role::Receiver)
            }
            Role::Receiver => {
                state.gets_handle = Some(attach.handle.0);
                state.get_address = attach
                    .source
                    .as_ref()
                    .and_then(|s| s.address.clone())
                    .unwrap_or_default();
                (GETS, Role::Sender)
            }
        };
        let ours = Attach {
            handle: Handle(handle),
            role: role.clone(),
            rcv_settle_mode: ReceiverSettleMode::First,
            initial_delivery_count: (role == Role::Sender).then_some(0),
            max_message_size: None,
            unsettled: None,
            incomplete_unsettled: false,
            offered_capabilities: None,
            desired_capabilities: None,
            properties: None,
            ..attach
        };
        frames::push(&mut state.out, frames::TYPE_AMQP, 0, &ours)?;
        if role == Role::Receiver {
            state.puts_credit = BROKER_CREDIT;
            let flow = puts_flow(state);
            frames::push(&mut state.out, frames::TYPE_AMQP, 0, &flow)?;
        }
        Ok(())
    }

    /// A transfer from the client: a request, or a frame of one.
    fn transfer(
        &self,
        state: &mut ServerState,
        t: &Transfer,
        message: &[u8],
        message_len: u64,
    ) -> Result<(), Fault> {
        if Some(t.handle.0) != state.puts_handle {
            return Err(Fault(format!(
                "a transfer on link handle {}, which the client did not attach for sending",
                t.handle.0
            )));
        }
        if state.complete {
            return Err(Fault(
                "a second request before the first was answered: requests are not pipelined".into(),
            ));
        }
        state.next_incoming_id = state.next_incoming_id.wrapping_add(1);
        if let Some(id) = t.delivery_id {
            state.puts = state.puts.wrapping_add(1);
            state.puts_credit = state.puts_credit.saturating_sub(1);
            state.request_unsettled = (t.settled != Some(true)).then_some(id);
            let sections = frames::sections(message).ok_or_else(|| {
                Fault("a request whose sections before the body do not parse".into())
            })?;
            state.request_durable = match sections.header {
                Some(h) => frames::decode::<Header>(h, "header section")?.durable,
                None => false,
            };
            let properties = match sections.properties {
                Some(p) => Some(frames::decode::<Properties>(p, "properties section")?),
                None => None,
            };
            state.message_id = properties.as_ref().and_then(|p| p.message_id.clone());
            state.body = properties
                .as_ref()
                .and_then(|p| p.content_type.as_ref())
                .map_or(AmqpBody::Zeros, |c| body_of(&c.0));
            let encoding = properties
                .as_ref()
                .and_then(|p| p.content_encoding.as_ref());
            state.encoded = encoding.is_some();
            if let Some(e) = encoding {
                if e.0 != DEFLATE {
                    return Err(Fault(format!(
                        "a request with content-encoding {:?}: stackbench's broker decodes \
                         {DEFLATE} only",
                        e.0
                    )));
                }
                if t.more {
                    return Err(Fault(
                        "a compressed request in more than one transfer frame: stackbench's \
                         broker decompresses a request sent as one frame"
                            .into(),
                    ));
                }
                let data = message.get(sections.body_at..).unwrap_or_default();
                if message_len != message.len() as u64 {
                    return Err(Fault(format!(
                        "a compressed request of {message_len} bytes: over the {} bytes \
                         stackbench's broker keeps of one",
                        frames::ENCODED_KEEP_BYTES
                    )));
                }
                state.level = level_of(data);
                let echo = !state.put_address.is_empty() && state.put_address == state.get_address;
                if echo {
                    // A broker passes the message on as it is.
                    state.packed.clear();
                    state.packed.extend_from_slice(data);
                } else {
                    // The responder reads the request.
                    inflate_body(
                        data,
                        frames::ENCODED_KEEP_BYTES as u64 * 16,
                        false,
                        &mut state.plain,
                    )?;
                }
            }
            // A hostile transfer's sections may claim bytes past its
            // payload (found by fuzzing: fuzz/regressions/amqp_server).
            state.request_body = message_len
                .checked_sub(sections.body_at as u64)
                .ok_or_else(|| {
                    Fault(format!(
                        "a request whose sections before the body ({} bytes) run past its \
                         transfer's {message_len} bytes",
                        sections.body_at
                    ))
                })?;
        } else {
            state.request_body += message_len;
        }
        state.complete = !t.more;
        Ok(())
    }

    /// Writes the answer up to its body into `state.out`: the put's
    /// disposition (if unsettled), a flow renewing its credit (if half is
    /// used), and the reply's transfer.
    fn prepare_answer(&self, state: &mut ServerState) -> Result<(), Fault> {
        state.out.clear();
        if let Some(id) = state.request_unsettled.take() {
            let accept = Disposition {
                role: Role::Receiver,
                first: id,
                last: None,
                settled: true,
                state: Some(DeliveryState::Accepted(Accepted {})),
                batchable: false,
            };
            frames::push(&mut state.out, frames::TYPE_AMQP, 0, &accept)?;
        }
        if state.puts_credit * 2 < BROKER_CREDIT {
            state.puts_credit = BROKER_CREDIT;
            let flow = puts_flow(state);
            frames::push(&mut state.out, frames::TYPE_AMQP, 0, &flow)?;
        }
        if state.gets_credit == 0 {
            return Err(Fault(
                "a request while the client's reply link has no credit: the client must \
                 grant credit (a flow) before it waits for a reply"
                    .into(),
            ));
        }
        let echo = !state.put_address.is_empty() && state.put_address == state.get_address;
        state.answer_body = if echo {
            state.request_body
        } else {
            self.reply_body
        };
        let delivery_id = state.gets;
        let persistent = state.request_durable;
        let transfer = Transfer {
            handle: Handle(GETS),
            delivery_id: Some(delivery_id),
            delivery_tag: Some(Binary::from(u64::from(delivery_id).to_be_bytes().to_vec())),
            message_format: Some(0),
            settled: Some(!persistent),
            more: false,
            rcv_settle_mode: None,
            state: None,
            resume: false,
            aborted: false,
            batchable: false,
        };
        let start = frames::push(&mut state.out, frames::TYPE_AMQP, 0, &transfer)?;
        if persistent {
            let header = Header {
                durable: true,
                ..Header::default()
            };
            frames::push_value(&mut state.out, start, &header)?;
        }
        let (message_id, correlation_id) = if echo {
            (state.message_id.take(), None)
        } else {
            (
                Some(MessageId::Ulong(u64::from(delivery_id) + 1)),
                state.message_id.take(),
            )
        };
        let properties = Properties {
            message_id,
            user_id: None,
            to: None,
            subject: None,
            reply_to: None,
            correlation_id,
            content_type: content_type(state.body).map(Symbol::from),
            content_encoding: state.encoded.then(|| Symbol::from(DEFLATE)),
            absolute_expiry_time: None,
            creation_time: None,
            group_id: None,
            group_sequence: None,
            reply_to_group_id: None,
        };
        frames::push_value(&mut state.out, start, &properties)?;
        if state.encoded && !echo {
            let len = usize::try_from(state.answer_body)
                .map_err(|_| Fault(format!("a reply body of {} bytes", state.answer_body)))?;
            let mut packed = std::mem::take(&mut state.packed);
            packed.clear();
            deflate_body(state.body, len, state.level, &mut state.plain, &mut packed);
            state.packed = packed;
        }
        if state.encoded {
            state.answer_body = state.packed.len() as u64;
        }
        let body = u32::try_from(state.answer_body).map_err(|_| {
            Fault(format!(
                "a reply body of {} bytes: AMQP sizes a frame in 32 bits",
                state.answer_body
            ))
        })?;
        frames::push_data_head(&mut state.out, start, body);
        let frame = (state.out.len() - start) as u64 + state.answer_body;
        if frame > u64::from(state.client_max_frame) {
            return Err(Fault(format!(
                "a reply of {} bytes (a frame of {frame}) is over the client's \
                 max-frame-size {}",
                state.answer_body, state.client_max_frame
            )));
        }
        if state.encoded {
            state.out.extend_from_slice(&state.packed);
            state.answer_body = 0;
        }
        state.gets = state.gets.wrapping_add(1);
        state.gets_credit -= 1;
        state.next_outgoing_id = state.next_outgoing_id.wrapping_add(1);
        Ok(())
    }
}

/// A flow granting the client's putting link its credit.
fn puts_flow(state: &ServerState) -> Flow {
    Flow {
        next_incoming_id: Some(state.next_incoming_id),
        incoming_window: SESSION_WINDOW,
        next_outgoing_id: state.next_outgoing_id,
        outgoing_window: SESSION_WINDOW,
        handle: Some(Handle(PUTS)),
        delivery_count: Some(state.puts),
        link_credit: Some(state.puts_credit),
        available: None,
        drain: false,
        echo: false,
        properties: None,
    }
}
