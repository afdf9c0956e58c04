//! `stackbench lab up|down|show`: one-line errors for bad files and missing
//! privileges, and — as root — the round trip through the binary and a
//! `lab up` killed half-way whose leftovers `lab down` removes completely
//! (no namespace, veth or qdisc left). Tests that need root skip
//! with a message elsewhere.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use stackbench_testkit::can_make_namespaces;

use crate::common::{examples, json_ok, stackbench};

/// `stackbench lab ACTION FILE`.
pub(crate) fn lab(action: &str, file: &Path) -> Command {
    let mut cmd = stackbench();
    cmd.args(["lab", action]).arg(file);
    cmd
}

/// An example lab file under a name of the test's own (so its namespaces
/// are its own), taken down when dropped: a failed assertion leaves no
/// namespace behind.
pub(crate) struct TestLab {
    pub file: PathBuf,
    pub name: String,
    _dir: tempfile::TempDir,
}

impl TestLab {
    /// `examples/EXAMPLE` (whose lab is named `example_name`) as lab `name`,
    /// any leftover of an earlier run taken down first.
    pub fn from_example(example: &str, example_name: &str, name: &str) -> TestLab {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(format!("{name}.toml"));
        let text = std::fs::read_to_string(examples().join(example)).unwrap();
        let text = text.replace(
            &format!("name = \"{example_name}\""),
            &format!("name = \"{name}\""),
        );
        std::fs::write(&file, text).unwrap();
        let _ = lab("down", &file).output();
        TestLab {
            file,
            name: name.to_string(),
            _dir: dir,
        }
    }

    /// This lab's namespaces that exist now.
    pub fn namespaces(&self) -> Vec<String> {
        let prefix = format!("sb-{}-", self.name);
        std::fs::read_dir("/run/netns")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.starts_with(&prefix))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for TestLab {
    fn drop(&mut self) {
        let _ = lab("down", &self.file).output();
    }
}

/// A short run of `workload` across lab `file` (client to server, 1 s, no
/// warm-up) with `flags`, stored; the stored run as `results show` gives it.
pub(crate) fn stored_run_across(file: &Path, workload: &str, flags: &[&str]) -> Value {
    let out = stackbench()
        .args(["run", "--lab"])
        .arg(file)
        .args(["--from", "client", "--to", "server", workload])
        .args(["--duration", "1s", "--warmup", "0s", "--json"])
        .args(flags)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("stackbench: stored as run "))
        .unwrap_or_else(|| panic!("no stored run: {err}"));
    json_ok(stackbench().args(["results", "show", id.trim(), "--json"]))
}

/// Runs `cmd`, expecting exit 2 and one line on stderr containing `needle`.
fn fails_with(cmd: &mut Command, needle: &str) {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.contains(needle), "want '{needle}': {err}");
}

fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bad_lab_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "name = \"Demo-1\"\n").unwrap();
    for action in ["up", "down", "show"] {
        fails_with(
            &mut lab(action, &bad),
            "bad.toml:1:8: bad lab name 'Demo-1'",
        );
    }
    for action in ["up", "down", "show"] {
        let out = lab(action, &dir.path().join("none.toml")).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("cannot read lab file"), "{err}");
        // The OS error was printed twice: by the message and as its cause.
        assert_eq!(err.matches("No such file").count(), 1, "{err}");
    }
}

/// Runs `stackbench ARGS` as an unprivileged user (nobody, when the tests run
/// as root) and returns its status and stderr. The binary and the files among
/// `args` are copied into a directory anyone may read first, so user nobody
/// can run them wherever the build and the checkout live.
pub fn output_without_root(args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("stackbench");
    std::fs::copy(assert_cmd::cargo::cargo_bin("stackbench"), &bin).unwrap();
    let mut cmd = Command::new(&bin);
    cmd.env("STACKBENCH_DB", dir.path().join("results.db"));
    for arg in args {
        let path = Path::new(arg);
        match path.file_name() {
            Some(name) if path.is_file() => {
                let copy = dir.path().join(name);
                std::fs::copy(path, &copy).unwrap();
                cmd.arg(copy)
            }
            _ => cmd.arg(arg),
        };
    }
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cmd.uid(65534).gid(65534); // nobody
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn without_root_lab_up_says_to_use_sudo() {
    let file = examples().join("lab-two-hosts.toml");
    let (code, err) = output_without_root(&["lab", "up", &file.to_string_lossy()]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("permission denied: lab commands need root"),
        "{err}"
    );
}

/// What `ip` and `tc` show of lab `name`: its named namespaces, and its
/// interfaces and qdiscs in the root namespace and in each of its own
/// (empty when iproute2 is not installed).
fn ip_shows(name: &str) -> Vec<String> {
    let run = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let ours = |l: &&str| l.contains(&format!("sb-{name}-")) || l.contains(&format!(" {name}-"));
    let mut seen: Vec<String> = Vec::new();
    let namespaces = run(&["ip", "netns", "list"]);
    seen.extend(namespaces.lines().filter(ours).map(String::from));
    let mut views = vec![run(&["ip", "-o", "link"]), run(&["tc", "qdisc", "show"])];
    for ns in lab_namespaces(name) {
        views.push(run(&["ip", "-n", &ns, "-o", "link"]));
        views.push(run(&["tc", "-n", &ns, "qdisc", "show"]));
    }
    for view in &views {
        seen.extend(view.lines().filter(ours).map(String::from));
    }
    seen
}

fn lab_namespaces(name: &str) -> Vec<String> {
    let prefix = format!("sb-{name}-");
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn lab_up_show_down_through_the_binary() {
    if !can_make_namespaces("lab_up_show_down_through_the_binary") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cli.toml");
    let text = std::fs::read_to_string(examples().join("lab-two-hosts.toml")).unwrap();
    std::fs::write(&file, text.replace("name = \"pair\"", "name = \"tcli\"")).unwrap();
    let _ = lab("down", &file).output();
    let up = stdout_of(&mut lab("up", &file));
    assert_eq!(
        up,
        "lab tcli up: 2 namespace(s) (2 created), 1 veth pair(s) (1 created)\n"
    );
    if Command::new("ip").arg("-V").output().is_ok() {
        let seen = ip_shows("tcli");
        assert!(
            seen.iter().any(|l| l.contains("tcli-0a")),
            "ip shows the lab while it is up: {seen:?}"
        );
    }
    let again = stdout_of(&mut lab("up", &file));
    assert_eq!(
        again,
        "lab tcli up: 2 namespace(s) (0 created), 1 veth pair(s) (0 created)\n"
    );
    let shown = stdout_of(&mut lab("show", &file));
    assert!(
        shown.contains("sb-tcli-server/tcli-0b: up, mtu 1500, tbf 100Mbit"),
        "{shown}"
    );
    assert!(shown.ends_with("state: as configured\n"), "{shown}");
    let down = stdout_of(&mut lab("down", &file));
    assert_eq!(
        down,
        "lab tcli down: removed sb-tcli-client sb-tcli-server\n"
    );
    assert!(lab_namespaces("tcli").is_empty());
    assert_eq!(ip_shows("tcli"), Vec::<String>::new());
}

/// A second file with the same lab name used to silently rewrite the first
/// file's lab (rate and addresses, exit 0), and `lab show` exited 0 whatever
/// the kernel held. Now the second `lab up` is refused (exit 2) and
/// `lab show` of a file that differs from the kernel exits 1.
#[test]
fn a_lab_up_from_another_file_of_the_same_name_is_refused() {
    if !can_make_namespaces("a_lab_up_from_another_file_of_the_same_name_is_refused") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(examples().join("lab-two-hosts.toml"))
        .unwrap()
        .replace("name = \"pair\"", "name = \"tdup\"");
    let (first, second) = (
        dir.path().join("first.toml"),
        dir.path().join("second.toml"),
    );
    std::fs::write(&first, &text).unwrap();
    std::fs::write(
        &second,
        text.replace("100Mbit", "200Mbit")
            .replace("10.77.1.", "10.77.9."),
    )
    .unwrap();
    let _ = lab("down", &first).output();
    stdout_of(&mut lab("up", &first));
    let out = lab("up", &second).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let owner = std::fs::canonicalize(&first).unwrap();
    assert!(
        err.contains(&format!(
            "lab 'tdup' is up from {}, not {}",
            owner.display(),
            second.display()
        )),
        "{err}"
    );
    // The first file's lab is as it was, and the second file's differs:
    // `show` says so in its status.
    let shown = stdout_of(&mut lab("show", &first));
    assert!(shown.ends_with("state: as configured\n"), "{shown}");
    let out = lab("show", &second).output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(shown.contains("differences from the lab file"), "{shown}");
    assert!(shown.contains("owner: lab 'tdup' is up from "), "{shown}");
    // The owner may bring it up again; after `down` anyone may.
    stdout_of(&mut lab("up", &first));
    stdout_of(&mut lab("down", &first));
    stdout_of(&mut lab("up", &second));
    stdout_of(&mut lab("down", &second));
    assert!(lab_namespaces("tdup").is_empty());
}

/// A lab of `hosts` hosts in pairs, each pair on a shaped link: big enough
/// that `up` takes a while to build.
fn many_hosts(name: &str, hosts: usize) -> String {
    let mut text = format!("name = \"{name}\"\n");
    for i in 0..hosts {
        text.push_str(&format!(
            "[[host]]\nname = \"h{i}\"\naddress = \"10.77.{}.{}/24\"\n",
            i / 2,
            i % 2 + 1
        ));
    }
    for i in 0..hosts / 2 {
        text.push_str(&format!(
            "[[link]]\na = \"h{}\"\nb = \"h{}\"\nrate = \"100Mbit\"\n",
            2 * i,
            2 * i + 1
        ));
    }
    text
}

/// Starts `lab up FILE` and SIGKILLs it as soon as `ready()` holds (polled
/// every millisecond, at most 20 s); returns the namespaces it left. Panics
/// if `up` finished first: then it was not killed half-way.
fn kill_up_when(file: &Path, name: &str, ready: impl Fn() -> bool) -> Vec<String> {
    let mut child = lab("up", file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(
            Instant::now() < deadline,
            "lab up did not get there within 20 s"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("lab up ended ({status}) before it could be killed half-way");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "lab up finished before it could be killed half-way"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    lab_namespaces(name)
}

/// Whether link 0 of lab `tkill` exists yet (read in-process: spawning
/// `ip` for each poll would be slower than `up` itself).
fn first_link_exists() -> bool {
    use stackbench_lab::{netlink::Netlink, netns, rtnl};
    netns::exists("sb-tkill-h0")
        && netns::run_in("sb-tkill-h0", || {
            let mut nl = Netlink::open().map_err(|e| stackbench_lab::LabError::os("netlink", e))?;
            Ok(rtnl::link(&mut nl, "tkill-0a").ok().flatten().is_some())
        })
        .unwrap_or(false)
}

/// `lab down FILE`, then nothing of lab `name` is left anywhere.
fn down_leaves_nothing(file: &Path, name: &str) {
    let down = stdout_of(&mut lab("down", file));
    assert!(
        down.starts_with(&format!("lab {name} down: removed sb-{name}-")),
        "{down}"
    );
    assert!(
        lab_namespaces(name).is_empty(),
        "namespaces left: {:?}",
        lab_namespaces(name)
    );
    assert_eq!(
        ip_shows(name),
        Vec::<String>::new(),
        "ip or tc still shows the lab"
    );
}

#[test]
fn lab_down_after_a_killed_lab_up_leaves_nothing() {
    if !can_make_namespaces("lab_down_after_a_killed_lab_up_leaves_nothing") {
        return;
    }
    const HOSTS: usize = 32;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kill.toml");
    std::fs::write(&file, many_hosts("tkill", HOSTS)).unwrap();
    let _ = lab("down", &file).output();

    // Killed while making namespaces.
    let left = kill_up_when(&file, "tkill", || !lab_namespaces("tkill").is_empty());
    eprintln!(
        "lab up killed with {} of {HOSTS} namespaces made",
        left.len()
    );
    assert!(!left.is_empty() && left.len() < HOSTS, "half-way: {left:?}");
    down_leaves_nothing(&file, "tkill");

    // Killed while making links: veths with their qdiscs exist.
    let left = kill_up_when(&file, "tkill", first_link_exists);
    eprintln!(
        "lab up killed with {} namespaces and its first veth made",
        left.len()
    );
    down_leaves_nothing(&file, "tkill");

    // A second up completes what a killed one began.
    kill_up_when(&file, "tkill", || !lab_namespaces("tkill").is_empty());
    stdout_of(&mut lab("up", &file));
    let shown = stdout_of(&mut lab("show", &file));
    assert!(shown.ends_with("state: as configured\n"), "{shown}");
    down_leaves_nothing(&file, "tkill");
}
