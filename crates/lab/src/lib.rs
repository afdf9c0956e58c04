//! Lab hosts and links: a lab file (TOML) describes hosts — network
//! namespaces with a CPU set, the analogue of LPARs — and links between them —
//! veth pairs with a rate (tbf), MTU and offloads, directly or through a
//! router namespace. `stackbench lab up|down|show FILE` builds, removes and
//! reads back a lab; this crate does the work, the cli only prints.
//!
//! Layers: [`parse`] and [`check`](crate::check) read and check the file into
//! a [`Lab`]; [`layout`] turns it into names, addresses and routes (pure);
//! [`up`], [`down`] and [`show`] act on the kernel through [`netns`]
//! (namespaces as `ip netns` makes them), [`rtnl`] and [`qdisc`] (rtnetlink
//! over the small synchronous [`netlink`] client) and [`ethtool`] (the
//! `SIOCETHTOOL` ioctl). Nothing shells out to `ip`, `tc` or `ethtool`.
//!
//! Every kernel object carries the lab's name: namespaces `sb-<lab>-<host>`,
//! interfaces `<lab>-<link><end>`. Labs therefore never collide, and `down`
//! finds what a killed `up` left by the prefix alone.

mod check;
pub mod down;
pub mod error;
pub mod ethtool;
pub mod layout;
pub mod netlink;
pub mod netns;
pub mod parse;
pub mod qdisc;
pub mod rtnl;
pub mod show;
pub mod spec;
pub mod up;

pub use down::down;
pub use error::LabError;
pub use layout::{layout, Layout};
pub use parse::{parse_lab, read_lab};
pub use show::{read, render, Readback};
pub use spec::{Host, IpNet, Lab, Link, Offloads};
pub use up::{up, UpReport};
