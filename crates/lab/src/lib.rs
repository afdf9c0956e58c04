//! Lab hosts and links: a lab file (TOML) describes hosts — network
//! namespaces with a CPU set, the analogue of LPARs — and links between them —
//! veth pairs with a rate (tbf), MTU and offloads, directly or through a
//! router namespace. `stackbench lab up|down|show FILE` builds, removes and
//! reads back a lab; this crate does the work, the cli only prints.
//!
//! Layers: [`parse`] and `check` read and check the file into
//! a [`Lab`]; [`mod@layout`] turns it into names, addresses and routes (pure);
//! [`mod@up`], [`mod@down`] and [`show`] act on the kernel through [`netns`]
//! (namespaces as `ip netns` makes them), [`rtnl`] and [`qdisc`] (rtnetlink
//! over the small synchronous [`netlink`] client) and [`ethtool`] (the
//! `SIOCETHTOOL` ioctl). Nothing shells out to `ip`, `tc` or `ethtool`.
//!
//! [`up_from`] is `up` for a lab read from a file: it refuses a lab of the
//! same name brought up from another file, and records the file ([`owner`]).
//!
//! Every kernel object carries the lab's name: namespaces `sb-<lab>-<host>`,
//! interfaces `<lab>-<link><end>`. Labs therefore never collide, and `down`
//! finds what a killed `up` left by the prefix alone.
//!
//! # Design note: runs across a lab
//!
//! `stackbench run --lab FILE --from A --to B WORKLOAD` (and the study keys
//! `lab`, `lab_from`, `lab_to`) drives from host A to a responder in host
//! B over the lab's link. Built as below in the runner crate (its `lab_run` module), with
//! [`path`] (the path A→B, B's address, the overrides checked as the file's
//! values are); the byte counters of the path's interfaces are stored too:
//!
//! - **Settings.** `lab` (a path), `lab_from` and `lab_to` (host names) join
//!   the settings table, so flags, study keys and the stored `settings` come
//!   from one definition. Link overrides `link_rate`, `link_mtu` and
//!   `link_offloads` apply to every link on the path A→B; a study variant or
//!   `[sweep] link_rate = ["10Gbit", "25Gbit"]` then changes them between
//!   steps. The runner's `resolve::resolve` checks that A and B are hosts joined by a
//!   link, direct or via a router (else a one-line error listing the links).
//! - **Building.** `Runner::execute` (stackbench-runner) calls [`up()`] with the file plus the
//!   overrides before each step. `up` reconciles in place (qdisc, MTU and
//!   offloads change; namespaces and pairs stay), so a variant costs
//!   milliseconds, and an unchanged lab costs one read.
//! - **Driver in A.** The run's driver thread opens `/run/netns/sb-<lab>-A`
//!   and calls [`netns::enter`] before it creates the control client and the
//!   workers: threads inherit the namespace of the thread that spawns them,
//!   so every data socket the transport seam opens belongs to A, with no
//!   change to the engine. The main thread, progress and Ctrl-C handling stay
//!   in the caller's namespace. A's `cpus` become the driver's CPU set unless
//!   the run's own CPU setting says otherwise.
//! - **Responder in B.** `SpawnedResponder` (the runner's `spawn` module) opens
//!   B's namespace file before forking and calls setns(2) in `pre_exec` (a
//!   plain system call, safe between fork and exec), then runs `stackbench
//!   serve --listen <B's address>:0 --cpus <B's cpus>`. IPv4 is used unless
//!   the run asks for IPv6 and both hosts have it. The control connection
//!   crosses the same link as the data: small, and outside the measurement
//!   window.
//! - **CPU.** Each side is still one process. A veth transmit runs the
//!   receive path on the sending CPU, so each side's CPU per transaction
//!   includes its share of the link's work, as a NIC interrupt would on a
//!   host; the report's CPU/MB comparisons (jumbo frames, offloads) rely on it.
//! - **Environment.** The run record gains `environment.lab`: the lab's name,
//!   the path A→B (hops: the routers on it) and, for each interface on it,
//!   the kernel's values from [`read`] — rate, burst, MTU, offloads,
//!   addresses — taken before the measurement window and read again after it
//!   (a typed warning if anything changed). The report's environment section
//!   prints them; `compare` can then say which link setting two sides differ in.
//! - **Priorities.** A link with
//!   `priority_classes = true` gets an htb root whose parent class has the
//!   link rate and whose children `1:10`…`1:16` are the priority levels 0…6;
//!   the run setting `priority` sets SO_PRIORITY to those class ids
//!   (`skb->priority` = class id picks the band) and DSCP CS0…CS6. The
//!   [`htb`] module documents the mapping; [`up::qdisc_error`] names
//!   `CONFIG_NET_SCH_HTB` where it is missing (this kernel has htb, not prio).
//! - **Delay, loss, pacing, IPsec.** Link keys
//!   `delay`, `jitter`, `loss`, `qdisc = "fq"`, `fq_maxrate`, `ipsec`,
//!   `ipsec_mode` and the run overrides `link_*` of the same names: the
//!   [`netem`] module builds the qdisc chain tbf → netem → fq (delay one
//!   way, on both hosts' sending ends), [`ipsec`] the ESP states and
//!   policies over NETLINK_XFRM ([`xfrm`]); [`probe`] tries each feature in a
//!   scratch namespace before `up` builds anything, so a kernel without
//!   netem, fq or ESP is refused in one line naming the option.
//! - **NAPI coalescing.** A link's `napi_defer_hard_irqs` and
//!   `gro_flush_timeout` (run settings `link_napi_defer_hard_irqs`,
//!   `link_gro_flush_timeout`) are written in sysfs on every interface at
//!   `up`, defaults included, and read back with `ethtool -c` ([`napi`]).
//! - **Host policy.** The run settings `host_policy_*` put an nftables
//!   table of N rules on host B's input path ([`policy`]), applied after
//!   each `up` and read back into the environment.
//! - **Inbound steering.** The run settings `link_rps_cpus` and
//!   `link_rps_flow_cnt` set RPS/RFS on every interface of the path
//!   ([`steering`]), written in each host's own sysfs after each `up`, read
//!   back with the per-CPU NET_RX softirq counts.
//! - **Load distribution.** A lab file's `[[distributor]]` puts an IPVS
//!   virtual service on a host over target hosts ([`distributor`], IPVS
//!   over generic netlink in [`ipvs`]), programmed at `up`, its per-target
//!   counters printed by `lab show`; the run setting `lab_targets` spreads
//!   a run's connections over its targets (a firewall-mark service, the
//!   responder listening in every target) and stores IPVS's counters.
//! - **Routing fast path.** The run setting `router_flowtable` puts an
//!   nftables flowtable on every router of the path ([`flowtable`]),
//!   applied after each `up` and read back with the forward chain's
//!   counter of packets that still took the full path.

mod check;
pub mod distributor;
pub mod down;
pub mod environment;
pub mod error;
pub mod ethtool;
pub mod flowtable;
pub mod htb;
pub mod ipsec;
pub mod ipvs;
pub mod layout;
pub mod lb;
pub mod macvlan;
pub mod napi;
pub mod netem;
pub mod netlink;
pub mod netns;
mod nl;
pub mod owner;
pub mod parse;
pub mod path;
pub mod policy;
pub mod probe;
pub mod qdisc;
pub mod rtnl;
pub mod show;
mod siocethtool;
mod source;
pub mod spec;
pub mod steering;
pub mod up;
pub mod vhost;
pub mod xfrm;

pub use down::down;
pub use error::LabError;
pub use layout::{layout, Layout};
pub use owner::up_from;
pub use parse::{parse_lab, read_lab};
pub use show::{read, render, render_counted, Readback};
pub use spec::{Host, IpNet, IpsecAlgorithm, IpsecMode, Lab, Link, LinkQdisc, Netem, Offloads};
pub use up::{up, UpReport};
