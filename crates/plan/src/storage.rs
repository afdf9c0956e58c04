//! Storage requirement (as TN3270 capacity planning tabulates it): each
//! component costs a
//! fixed amount plus an amount per connection, so for a population of N users
//! it needs fixed + per_conn × N bytes. Components are per side (server,
//! client) and per kind (user-space memory of the process, kernel socket
//! buffers), mirroring the z/OS "TN3270 private" and "ECSA" (common storage)
//! rows.

use serde::Serialize;

use crate::error::PlanError;
use crate::report::{bytes, num, Report, Table};

/// Which end of the connections a component lives on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Server,
    Client,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

/// What kind of memory a component is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The process's own memory (resident set).
    UserSpace,
    /// Kernel socket memory (buffers, socket structures).
    KernelSocket,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::UserSpace => "user-space",
            Kind::KernelSocket => "kernel socket",
        }
    }
}

/// One line of the storage model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Component {
    pub side: Side,
    pub kind: Kind,
    pub fixed_bytes: f64,
    pub bytes_per_conn: f64,
}

/// Inputs of `plan storage`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StorageInput {
    /// Connections (users) to plan for.
    pub users: u64,
    pub components: Vec<Component>,
}

/// One component at the planned population.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ComponentPlan {
    #[serde(flatten)]
    pub component: Component,
    /// `fixed_bytes + bytes_per_conn × users`.
    pub total_bytes: f64,
    /// `total_bytes / users`: what one more user costs on average, fixed part
    /// included.
    pub bytes_per_user: f64,
}

/// Sum over one side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SideTotal {
    pub side: Side,
    pub total_bytes: f64,
    pub bytes_per_user: f64,
}

/// Result of `plan storage`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoragePlan {
    pub users: u64,
    pub components: Vec<ComponentPlan>,
    pub sides: Vec<SideTotal>,
    pub total_bytes: f64,
    pub bytes_per_user: f64,
}

/// Applies fixed + per-connection × users to every component.
pub fn plan(input: &StorageInput) -> Result<StoragePlan, PlanError> {
    if input.components.is_empty() {
        return Err(PlanError::missing(
            "server-user-per-conn",
            "give at least one component, e.g. --server-user-per-conn 4.1kB (or --from result.json)",
        ));
    }
    let n = input.users as f64;
    let components: Vec<ComponentPlan> = input
        .components
        .iter()
        .map(|c| {
            let total_bytes = c.fixed_bytes + c.bytes_per_conn * n;
            ComponentPlan {
                component: *c,
                total_bytes,
                bytes_per_user: total_bytes / n,
            }
        })
        .collect();
    let sides: Vec<SideTotal> = [Side::Server, Side::Client]
        .into_iter()
        .filter(|s| components.iter().any(|c| c.component.side == *s))
        .map(|side| {
            let total_bytes: f64 = components
                .iter()
                .filter(|c| c.component.side == side)
                .map(|c| c.total_bytes)
                .sum();
            SideTotal {
                side,
                total_bytes,
                bytes_per_user: total_bytes / n,
            }
        })
        .collect();
    let total_bytes: f64 = sides.iter().map(|s| s.total_bytes).sum();
    Ok(StoragePlan {
        users: input.users,
        components,
        sides,
        total_bytes,
        bytes_per_user: total_bytes / n,
    })
}

impl StoragePlan {
    /// The human table.
    pub fn report(&self, digits: usize) -> Report {
        let mut t = Table::new(&["side", "component", "formula", "total", "per user"]);
        for c in &self.components {
            let comp = &c.component;
            t.row([
                comp.side.name().to_string(),
                comp.kind.name().to_string(),
                format!(
                    "{} + {} × {} users",
                    exact_bytes(comp.fixed_bytes),
                    exact_bytes(comp.bytes_per_conn),
                    num(self.users as f64)
                ),
                bytes(c.total_bytes, digits),
                bytes(c.bytes_per_user, digits),
            ]);
        }
        for s in &self.sides {
            t.row([
                s.side.name().to_string(),
                "total".to_string(),
                String::new(),
                bytes(s.total_bytes, digits),
                bytes(s.bytes_per_user, digits),
            ]);
        }
        if self.sides.len() > 1 {
            t.row([
                "both".to_string(),
                "total".to_string(),
                String::new(),
                bytes(self.total_bytes, digits),
                bytes(self.bytes_per_user, digits),
            ]);
        }
        Report {
            title: format!(
                "Storage for {} users (TN3270 capacity method): fixed + per connection × users",
                num(self.users as f64)
            ),
            tables: vec![t],
            notes: vec![
                "sizes use binary multiples (kB = 1024 B, MB = 1024 kB, GB = 1024 MB)".into(),
            ],
            warnings: Vec::new(),
        }
    }
}

/// An input size as typed: whole bytes below 1 MB (`2004B`), else in MB/GB.
fn exact_bytes(b: f64) -> String {
    if b < 1_048_576.0 {
        format!("{}B", num(b))
    } else {
        bytes(b, 9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: f64 = 1_048_576.0;
    const GB: f64 = 1024.0 * MB;

    /// IBM's 2008 TN3270 capacity tables, one server with one port, 256K
    /// clear-text users: ECSA
    /// 501 MB and TN3270 private storage 1.07 GB. Per user that is 2004 B of
    /// common (kernel-side) storage and 4382.72 B of private storage; the
    /// per-connection model gives those figures back at 256K users and
    /// half of them at 128K.
    #[test]
    fn tn3270_storage_per_user() {
        let components = vec![
            Component {
                side: Side::Server,
                kind: Kind::KernelSocket,
                fixed_bytes: 0.0,
                bytes_per_conn: 501.0 * MB / 262_144.0,
            },
            Component {
                side: Side::Server,
                kind: Kind::UserSpace,
                fixed_bytes: 0.0,
                bytes_per_conn: 1.07 * GB / 262_144.0,
            },
        ];
        assert_eq!(components[0].bytes_per_conn, 2004.0);
        let p = plan(&StorageInput {
            users: 262_144,
            components: components.clone(),
        })
        .unwrap();
        assert!((p.components[0].total_bytes - 501.0 * MB).abs() < 1e-6);
        assert!((p.components[1].total_bytes - 1.07 * GB).abs() < 1e-3);
        let half = plan(&StorageInput {
            users: 131_072,
            components,
        })
        .unwrap();
        assert!((half.total_bytes * 2.0 - p.total_bytes).abs() < 1e-3);
        assert_eq!(p.report(3).tables[0].rows[0][3], "501MB");
    }

    #[test]
    fn fixed_part_spreads_over_users() {
        let p = plan(&StorageInput {
            users: 1000,
            components: vec![
                Component {
                    side: Side::Server,
                    kind: Kind::UserSpace,
                    fixed_bytes: 10.0 * MB,
                    bytes_per_conn: 4096.0,
                },
                Component {
                    side: Side::Client,
                    kind: Kind::UserSpace,
                    fixed_bytes: 0.0,
                    bytes_per_conn: 1000.0,
                },
            ],
        })
        .unwrap();
        assert_eq!(p.components[0].total_bytes, 10.0 * MB + 4_096_000.0);
        assert_eq!(
            p.components[0].bytes_per_user,
            (10.0 * MB) / 1000.0 + 4096.0
        );
        assert_eq!(p.sides.len(), 2);
        assert_eq!(p.total_bytes, 10.0 * MB + 4_096_000.0 + 1_000_000.0);
    }

    #[test]
    fn no_components_is_an_input_error() {
        let e = plan(&StorageInput {
            users: 1,
            components: vec![],
        })
        .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--server-user-per-conn is required"));
    }
}
