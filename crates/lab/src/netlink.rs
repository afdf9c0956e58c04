//! A small synchronous netlink client (NETLINK_ROUTE, and NETLINK_XFRM for
//! the IPsec states): build a request (header, fixed
//! struct, attributes, nests), send it, and read the kernel's ack, single
//! reply or dump, with the kernel's extended-ack message on errors.
//!
//! Why hand-written: the well-kept Rust netlink stack (`rtnetlink` over
//! `netlink-packet-route`) is async and needs tokio, which nothing else in
//! stackbench uses; `neli` is synchronous but large and generic, and its
//! route-family coverage (tbf options, veth peers) would still need raw
//! attributes. The lab needs a dozen message shapes, all documented in
//! rtnetlink(7) and the uapi headers, so ~200 lines over `libc` are less to
//! keep than a dependency. The socket is opened in the namespace of the
//! calling thread, which is how the lab acts inside a namespace
//! ([`crate::netns::run_in`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Request flags (linux/netlink.h).
pub const F_REQUEST: u16 = 0x1;
pub const F_ACK: u16 = 0x4;
pub const F_DUMP: u16 = 0x300;
pub const F_REPLACE: u16 = 0x100;
pub const F_EXCL: u16 = 0x200;
pub const F_CREATE: u16 = 0x400;
/// Marks a nested attribute (linux/netlink.h `NLA_F_NESTED`).
const NLA_F_NESTED: u16 = 0x8000;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// The ack carries TLVs (extended ack) / omits the request's payload.
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLM_F_CAPPED: u16 = 0x100;
const NLMSGERR_ATTR_MSG: u16 = 1;
const SOL_NETLINK: libc::c_int = 270;
const NETLINK_CAP_ACK: libc::c_int = 10;
const NETLINK_EXT_ACK: libc::c_int = 11;
const HEADER_LEN: usize = 16;

/// A failed request: the errno and the kernel's explanation, if it gave one.
#[derive(Debug)]
pub struct NlError {
    pub source: io::Error,
    pub message: Option<String>,
}

impl From<io::Error> for NlError {
    fn from(source: io::Error) -> Self {
        NlError {
            source,
            message: None,
        }
    }
}

impl NlError {
    /// The errno, if the kernel gave one.
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

fn align(len: usize) -> usize {
    (len + 3) & !3
}

/// A request being built: the netlink header, a fixed struct, attributes.
pub struct Message {
    buf: Vec<u8>,
}

impl Message {
    /// A request of type `kind` with `flags` (F_REQUEST is added) whose
    /// fixed part is `header` (e.g. the 16 bytes of a `struct ifinfomsg`).
    pub fn new(kind: u16, flags: u16, header: &[u8]) -> Message {
        let mut buf = vec![0u8; HEADER_LEN];
        buf[4..6].copy_from_slice(&kind.to_ne_bytes());
        buf[6..8].copy_from_slice(&(flags | F_REQUEST).to_ne_bytes());
        buf.extend_from_slice(header);
        buf.resize(align(buf.len()), 0);
        Message { buf }
    }

    /// Appends attribute `kind` with `data`.
    pub fn attr(&mut self, kind: u16, data: &[u8]) -> &mut Self {
        let len = u16::try_from(4 + data.len()).expect("netlink attribute under 64 KiB");
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(data);
        self.buf.resize(align(self.buf.len()), 0);
        self
    }

    pub fn attr_u32(&mut self, kind: u16, value: u32) -> &mut Self {
        self.attr(kind, &value.to_ne_bytes())
    }

    /// A NUL-terminated string attribute (interface names, qdisc kinds).
    pub fn attr_str(&mut self, kind: u16, value: &str) -> &mut Self {
        let mut data = value.as_bytes().to_vec();
        data.push(0);
        self.attr(kind, &data)
    }

    /// Opens a nested attribute; close it with [`Message::end`].
    pub fn nest(&mut self, kind: u16) -> usize {
        let start = self.buf.len();
        self.attr(kind | NLA_F_NESTED, &[]);
        start
    }

    /// Closes the nest opened at `start`.
    pub fn end(&mut self, start: usize) {
        let len = u16::try_from(self.buf.len() - start).expect("nest under 64 KiB");
        self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
    }

    /// Appends raw bytes (a nested struct such as a veth peer's ifinfomsg).
    pub fn raw(&mut self, data: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(data);
        self.buf.resize(align(self.buf.len()), 0);
        self
    }

    /// Everything after the netlink header (for tests of message layouts).
    #[cfg(test)]
    pub(crate) fn body(&self) -> &[u8] {
        &self.buf[HEADER_LEN..]
    }

    fn finish(&mut self, seq: u32) -> &[u8] {
        let len = u32::try_from(self.buf.len()).expect("request under 4 GiB");
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        self.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
        &self.buf
    }
}

/// The attributes in `bytes`, as (type without flags, payload).
pub fn attrs(bytes: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let kind = u16::from_ne_bytes([rest[2], rest[3]]) & 0x3fff;
        if len < 4 || len > rest.len() {
            return None;
        }
        let data = &rest[4..len];
        rest = &rest[align(len).min(rest.len())..];
        Some((kind, data))
    })
}

/// Reads a native-endian u32 at `offset`, 0 when out of range.
pub fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    bytes
        .get(offset..offset + 4)
        .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// A NUL-terminated string attribute's text.
pub fn text(data: &[u8]) -> String {
    let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    String::from_utf8_lossy(&data[..end]).into_owned()
}

/// A NETLINK_ROUTE socket in the calling thread's network namespace.
pub struct Netlink {
    fd: OwnedFd,
    seq: u32,
}

impl Netlink {
    /// Opens a NETLINK_ROUTE socket with extended acks (the kernel's reason
    /// for an error).
    pub fn open() -> io::Result<Netlink> {
        Netlink::open_protocol(libc::NETLINK_ROUTE)
    }

    /// Opens a socket of netlink family `protocol` (`NETLINK_XFRM` for IPsec).
    pub fn open_protocol(protocol: libc::c_int) -> io::Result<Netlink> {
        // SAFETY: plain socket(2); the returned descriptor is owned below.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                protocol,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        for option in [NETLINK_EXT_ACK, NETLINK_CAP_ACK] {
            let on: libc::c_int = 1;
            // SAFETY: setsockopt reads one c_int from a valid pointer.
            // Older kernels lack these options: errors leave plain acks.
            unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    SOL_NETLINK,
                    option,
                    (&on as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
        Ok(Netlink { fd, seq: 0 })
    }

    fn send(&mut self, msg: &mut Message) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        let bytes = msg.finish(self.seq);
        // SAFETY: sends `bytes.len()` bytes from a live slice.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(self.seq)
    }

    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            // SAFETY: receives into a live, writable buffer of its length.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }

    /// Sends `msg` and collects the reply messages' payloads (after the
    /// netlink header) until the ack or the end of the dump.
    fn exchange(&mut self, mut msg: Message) -> Result<Vec<Vec<u8>>, NlError> {
        let dump = u16::from_ne_bytes([msg.buf[6], msg.buf[7]]) & F_DUMP == F_DUMP;
        let seq = self.send(&mut msg)?;
        let mut buf = vec![0u8; 64 * 1024];
        let mut replies = Vec::new();
        loop {
            let n = self.recv(&mut buf)?;
            let mut rest = &buf[..n];
            while rest.len() >= HEADER_LEN {
                let len = (u32_at(rest, 0) as usize).clamp(HEADER_LEN, rest.len());
                let kind = u16::from_ne_bytes([rest[4], rest[5]]);
                let flags = u16::from_ne_bytes([rest[6], rest[7]]);
                let (payload, this_seq) = (&rest[HEADER_LEN..len], u32_at(rest, 8));
                rest = &rest[align(len).min(rest.len())..];
                if this_seq != seq {
                    continue; // a stale reply to an earlier request
                }
                match kind {
                    NLMSG_ERROR | NLMSG_DONE => {
                        let code = u32_at(payload, 0) as i32;
                        if code != 0 {
                            return Err(NlError {
                                source: io::Error::from_raw_os_error(-code),
                                message: ext_ack_message(payload, flags),
                            });
                        }
                        return Ok(replies);
                    }
                    _ => replies.push(payload.to_vec()),
                }
            }
            if !dump && !replies.is_empty() {
                // A single reply (a get) is followed by no ack unless asked.
                return Ok(replies);
            }
        }
    }

    /// Sends a request that changes something and waits for its ack.
    pub fn request(&mut self, mut msg: Message) -> Result<(), NlError> {
        let flags = u16::from_ne_bytes([msg.buf[6], msg.buf[7]]) | F_ACK;
        msg.buf[6..8].copy_from_slice(&flags.to_ne_bytes());
        self.exchange(msg).map(drop)
    }

    /// Sends a dump request and returns every reply's payload.
    pub fn dump(&mut self, mut msg: Message) -> Result<Vec<Vec<u8>>, NlError> {
        let flags = u16::from_ne_bytes([msg.buf[6], msg.buf[7]]) | F_DUMP;
        msg.buf[6..8].copy_from_slice(&flags.to_ne_bytes());
        self.exchange(msg)
    }

    /// Sends a get request for one object and returns its payload.
    pub fn get(&mut self, msg: Message) -> Result<Vec<u8>, NlError> {
        let mut replies = self.exchange(msg)?;
        Ok(replies.pop().unwrap_or_default())
    }
}

/// The text of an extended ack (`NLMSGERR_ATTR_MSG`) in an error payload.
fn ext_ack_message(payload: &[u8], flags: u16) -> Option<String> {
    if flags & NLM_F_ACK_TLVS == 0 {
        return None;
    }
    // struct nlmsgerr: the errno, then the request's header (and, unless
    // capped, its payload), then the TLVs.
    let request_len = u32_at(payload, 4) as usize;
    let skip = if flags & NLM_F_CAPPED != 0 {
        4 + HEADER_LEN
    } else {
        4 + align(request_len.max(HEADER_LEN))
    };
    let tlvs = payload.get(skip..)?;
    attrs(tlvs)
        .find(|(kind, _)| *kind == NLMSGERR_ATTR_MSG)
        .map(|(_, data)| text(data))
        .filter(|m| !m.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_aligned_and_nests_closed() {
        let mut m = Message::new(16, F_CREATE, &[0u8; 16]);
        let nest = m.nest(18);
        m.attr_str(1, "veth");
        m.end(nest);
        m.attr_u32(4, 1500);
        let bytes = m.finish(7).to_vec();
        assert_eq!(bytes.len() % 4, 0);
        assert_eq!(u32_at(&bytes, 0) as usize, bytes.len());
        assert_eq!(u32_at(&bytes, 8), 7);
        let body = &bytes[32..];
        let got: Vec<(u16, Vec<u8>)> = attrs(body).map(|(k, d)| (k, d.to_vec())).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, 18);
        assert_eq!(text(attrs(&got[0].1).next().unwrap().1), "veth");
        assert_eq!(got[1], (4, 1500u32.to_ne_bytes().to_vec()));
    }

    #[test]
    fn extended_ack_text_is_found() {
        let mut payload = (-2i32).to_ne_bytes().to_vec();
        payload.extend_from_slice(&[16, 0, 0, 0]);
        payload.extend_from_slice(&[0u8; 12]);
        let mut tlv = Message { buf: Vec::new() };
        tlv.attr_str(NLMSGERR_ATTR_MSG, "Specified qdisc kind is unknown");
        payload.extend_from_slice(&tlv.buf);
        let msg = ext_ack_message(&payload, NLM_F_ACK_TLVS | NLM_F_CAPPED);
        assert_eq!(msg.as_deref(), Some("Specified qdisc kind is unknown"));
        assert_eq!(ext_ack_message(&payload, 0), None);
    }
}
