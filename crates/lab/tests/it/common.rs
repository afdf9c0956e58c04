//! Helpers for the kernel tests: a guard that takes a lab down when a test
//! ends, passed or failed, and the labs they build (whether this process may
//! make namespaces is testkit's root-tier probe).

use stackbench_lab::{parse_lab, Lab};

/// A lab that is taken down when the guard is dropped.
pub struct LabGuard(pub Lab);

impl LabGuard {
    /// Parses `text` (which must be valid) and removes leftovers of an
    /// earlier, interrupted run of the same test.
    pub fn new(text: &str) -> LabGuard {
        let lab = parse_lab(text, "test.toml").expect("test lab parses");
        stackbench_lab::down(&lab.name).expect("clean start");
        LabGuard(lab)
    }
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        let _ = stackbench_lab::down(&self.0.name);
    }
}

/// Two hosts on one link in one subnet, with lab name `name` and `extra`
/// keys appended to the link.
pub fn two_hosts(name: &str, extra: &str) -> String {
    format!(
        r#"name = "{name}"
[[host]]
name = "client"
cpus = "0"
address = ["10.77.1.1/24", "fd77:1::1/64"]
[[host]]
name = "server"
address = ["10.77.1.2/24", "fd77:1::2/64"]
[[link]]
a = "client"
b = "server"
{extra}
"#
    )
}

/// The names under /run/netns that start with `prefix`.
pub fn namespaces(prefix: &str) -> Vec<String> {
    stackbench_lab::netns::list(prefix).expect("list /run/netns")
}
