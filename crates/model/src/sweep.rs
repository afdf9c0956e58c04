//! Sweeps: one dimension, or two crossed, each a list of values of the client
//! count, the request or response size, or any run setting (the settings
//! table's names). A sweep point is applied to a workload (client count and
//! sizes, to every class of a mix) and to the run settings, through the same
//! grammar and range checks as flags and study keys.
//!
//! Every run of a sweep is labelled `sweep` = the dimension names joined by
//! `,` and `sweep.<name>` = the value's canonical text, which is what the
//! report groups and plots by.

use crate::settings::{find, RunSettings, SettingDef, SettingError};
use crate::size::{format_count, format_size, parse_count, parse_size};
use crate::Workload;

/// Most dimensions a sweep may cross.
pub const MAX_DIMS: usize = 2;
/// Most points a sweep may have (all dimensions crossed): a typo must not
/// queue a week of runs.
pub const MAX_POINTS: usize = 256;

/// What a sweep dimension varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// Clients of every class.
    Clients,
    /// Request bytes of every class.
    Request,
    /// Response bytes of every class.
    Response,
    /// A run setting.
    Setting(&'static SettingDef),
}

/// One swept dimension and its values (canonical text, in the order given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepDim {
    pub axis: Axis,
    pub name: String,
    pub values: Vec<String>,
}

/// A sweep: one or two dimensions, crossed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sweep {
    pub dims: Vec<SweepDim>,
}

/// One point of a sweep: `(dimension name, value)` per dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepPoint {
    pub values: Vec<(String, String)>,
}

fn error(name: &str, value: &str, message: String) -> SettingError {
    SettingError {
        name: name.to_string(),
        value: value.to_string(),
        message,
    }
}

/// The dimensions a sweep may name, for error messages.
fn allowed_dims() -> String {
    let mut names = vec!["clients", "request", "response"];
    names.extend(crate::settings::names());
    names.join(", ")
}

/// Checks one value of a dimension and returns its canonical text.
fn canonical(axis: Axis, name: &str, text: &str) -> Result<String, SettingError> {
    let t = text.trim();
    let bad = |e: &dyn std::fmt::Display| error(name, text, e.to_string());
    match axis {
        Axis::Clients => parse_count(t, t).map(format_count).map_err(|e| bad(&e)),
        Axis::Request | Axis::Response => parse_size(t, t).map(format_size).map_err(|e| bad(&e)),
        Axis::Setting(def) => {
            let mut s = RunSettings::default();
            s.set(def.name, t)?;
            Ok(s.text_of(def.name).unwrap_or_default())
        }
    }
}

impl SweepDim {
    /// A dimension named `name` (a setting's name or flag spelling, or
    /// `clients`/`request`/`response`) over `values`.
    pub fn new(name: &str, values: &[String]) -> Result<SweepDim, SettingError> {
        let key = name.trim();
        let axis = match key {
            "clients" => Axis::Clients,
            "request" => Axis::Request,
            "response" => Axis::Response,
            _ => Axis::Setting(find(key).ok_or_else(|| {
                error(
                    key,
                    "",
                    format!(
                        "unknown sweep dimension '{key}': use one of {}",
                        allowed_dims()
                    ),
                )
            })?),
        };
        let name = match axis {
            Axis::Setting(def) => def.name.to_string(),
            _ => key.to_string(),
        };
        if values.is_empty() {
            return Err(error(
                &name,
                "",
                format!("no values to sweep {name} over: give at least one, e.g. {name}=1,2,4"),
            ));
        }
        let mut canon = Vec::with_capacity(values.len());
        for v in values {
            let c = canonical(axis, &name, v)?;
            if canon.contains(&c) {
                return Err(error(
                    &name,
                    v,
                    format!("{v} is swept twice: give each value once"),
                ));
            }
            canon.push(c);
        }
        Ok(SweepDim {
            axis,
            name,
            values: canon,
        })
    }

    /// Parses the command-line form `NAME=V1,V2,…` (values containing commas,
    /// such as CPU lists, are separated by `;` instead: `server_cpus=1;0-1`).
    pub fn parse_flag(text: &str) -> Result<SweepDim, SettingError> {
        let (name, list) = text.split_once('=').ok_or_else(|| {
            error(
                text,
                text,
                "give NAME=V1,V2,…, e.g. clients=1,2,4,8 (server_cpus=1;0-1 for CPU lists)"
                    .to_string(),
            )
        })?;
        let sep = if list.contains(';') { ';' } else { ',' };
        let values: Vec<String> = list
            .split(sep)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(String::from)
            .collect();
        SweepDim::new(name, &values)
    }
}

impl Sweep {
    /// A sweep over `dims`, checking their number, distinctness and size.
    pub fn new(dims: Vec<SweepDim>) -> Result<Sweep, SettingError> {
        if dims.len() > MAX_DIMS {
            let names: Vec<&str> = dims.iter().map(|d| d.name.as_str()).collect();
            return Err(error(
                &names.join(","),
                "",
                format!(
                    "{} sweep dimensions ({}): cross at most {MAX_DIMS}",
                    dims.len(),
                    names.join(", ")
                ),
            ));
        }
        if dims.len() == 2 && dims[0].name == dims[1].name {
            return Err(error(
                &dims[0].name,
                "",
                format!("{} is swept twice: sweep it once", dims[0].name),
            ));
        }
        let points: usize = dims.iter().map(|d| d.values.len()).product();
        if points > MAX_POINTS {
            return Err(error(
                &dims[0].name,
                "",
                format!("{points} sweep points: at most {MAX_POINTS}; sweep fewer values"),
            ));
        }
        Ok(Sweep { dims })
    }

    /// Whether there is anything to sweep.
    pub fn is_empty(&self) -> bool {
        self.dims.is_empty()
    }

    /// Every point, the first dimension varying slowest; one empty point when
    /// nothing is swept.
    pub fn points(&self) -> Vec<SweepPoint> {
        let mut points = vec![SweepPoint { values: Vec::new() }];
        for dim in &self.dims {
            points = points
                .into_iter()
                .flat_map(|p| {
                    dim.values.iter().map(move |v| {
                        let mut values = p.values.clone();
                        values.push((dim.name.clone(), v.clone()));
                        SweepPoint { values }
                    })
                })
                .collect();
        }
        points
    }

    /// The dimension names joined by `,` (the `sweep` label).
    pub fn label(&self) -> String {
        self.dims
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl SweepPoint {
    /// `workload` and `settings` at this point. Values were checked when the
    /// sweep was built; cross-checks (e.g. a setting's range) still report.
    pub fn apply(
        &self,
        workload: &Workload,
        settings: &mut RunSettings,
    ) -> Result<Workload, SettingError> {
        let mut w = workload.clone();
        for (name, value) in &self.values {
            let bad = |e: &dyn std::fmt::Display| error(name, value, e.to_string());
            match name.as_str() {
                "clients" => {
                    let n = parse_count(value, value).map_err(|e| bad(&e))?;
                    w.classes.iter_mut().for_each(|c| c.clients = n);
                }
                "request" | "response" => {
                    let b = parse_size(value, value).map_err(|e| bad(&e))?;
                    for c in &mut w.classes {
                        match name.as_str() {
                            "request" => c.request_bytes = b,
                            _ => c.response_bytes = b,
                        }
                    }
                }
                _ => settings.set(name, value)?,
            }
        }
        Ok(w)
    }

    /// Labels to store a run of this point with (none for the empty point).
    pub fn labels(&self) -> Vec<(String, String)> {
        if self.values.is_empty() {
            return Vec::new();
        }
        let dims: Vec<&str> = self.values.iter().map(|(n, _)| n.as_str()).collect();
        let mut out = vec![("sweep".to_string(), dims.join(","))];
        out.extend(
            self.values
                .iter()
                .map(|(n, v)| (format!("sweep.{n}"), v.clone())),
        );
        out
    }

    /// `clients=8, server_cpus=0-1`, for progress lines.
    pub fn describe(&self) -> String {
        self.values
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim(text: &str) -> SweepDim {
        SweepDim::parse_flag(text).unwrap()
    }

    #[test]
    fn points_cross_two_dimensions_first_slowest() {
        let s = Sweep::new(vec![dim("clients=1,2"), dim("server_cpus=1;0-1")]).unwrap();
        let p = s.points();
        assert_eq!(p.len(), 4);
        assert_eq!(p[1].describe(), "clients=1, server_cpus=0-1");
        assert_eq!(p[2].describe(), "clients=2, server_cpus=1");
        assert_eq!(s.label(), "clients,server_cpus");
    }

    #[test]
    fn a_point_changes_every_class_and_the_settings() {
        let w: Workload = "RR1(1B/1B)+STR2(1B/20MB)".parse().unwrap();
        let s = Sweep::new(vec![dim("clients=4K"), dim("nodelay=true")]).unwrap();
        let mut settings = RunSettings::default();
        let out = s.points()[0].apply(&w, &mut settings).unwrap();
        assert_eq!(out.to_string(), "RR4K(1B/1B)+STR4K(1B/20MB)");
        assert_eq!(settings.nodelay, Some(true));
        let labels = s.points()[0].labels();
        assert_eq!(labels[1], ("sweep.clients".to_string(), "4K".to_string()));
    }

    #[test]
    fn values_are_canonical_and_checked() {
        assert_eq!(dim("request=4096B,1MB").values, ["4kB", "1MB"]);
        assert_eq!(dim("duration=1000ms").values, ["1s"]);
        let e = SweepDim::parse_flag("threads=0,1").unwrap_err();
        assert_eq!(e.message, "out of range: use 1 to 1024");
        let e = SweepDim::parse_flag("clientz=1").unwrap_err();
        assert!(e
            .message
            .starts_with("unknown sweep dimension 'clientz': use one of clients"));
        assert!(SweepDim::parse_flag("clients=1,1").is_err());
        assert!(SweepDim::parse_flag("clients").is_err());
        let three = vec![dim("clients=1"), dim("request=1B"), dim("nodelay=true")];
        assert!(Sweep::new(three)
            .unwrap_err()
            .message
            .contains("cross at most 2"));
    }
}
