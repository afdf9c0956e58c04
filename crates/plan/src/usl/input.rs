//! Reading (N, X) points: `--point 18:996` and CSV files of two columns
//! (N then X; comma, semicolon or blank separated; an optional header line;
//! `#` comments).

use crate::error::PlanError;
use crate::units::parse_number;

/// Parses `N:X`.
pub fn parse_point(flag: &str, text: &str) -> Result<(f64, f64), PlanError> {
    let fix = "write N:X, e.g. 18:996";
    let (n, x) = text
        .split_once(':')
        .ok_or_else(|| PlanError::bad(flag, text, "not a point", fix))?;
    let n =
        parse_number(flag, n).map_err(|_| PlanError::bad(flag, text, "N is not a number", fix))?;
    let x =
        parse_number(flag, x).map_err(|_| PlanError::bad(flag, text, "X is not a number", fix))?;
    Ok((n, x))
}

/// Parses a CSV of N,X rows; `path` names the file in errors.
pub fn parse_csv(path: &str, text: &str) -> Result<Vec<(f64, f64)>, PlanError> {
    let mut points = Vec::new();
    let mut first = true;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let cells: Vec<&str> = line
            .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
            .filter(|c| !c.is_empty())
            .collect();
        let parsed = match cells.as_slice() {
            [n, x, ..] => n.parse::<f64>().ok().zip(x.parse::<f64>().ok()),
            _ => None,
        };
        match parsed {
            Some(p) => points.push(p),
            None if first => {} // a header line
            None => {
                return Err(PlanError::file(
                    path,
                    format!("line {}: '{raw}' is not N,X; each line holds concurrency and throughput, e.g. 18,996", i + 1),
                ))
            }
        }
        first = false;
    }
    if points.is_empty() {
        return Err(PlanError::file(
            path,
            "holds no N,X rows; write one per line, e.g. 18,996",
        ));
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_and_csv() {
        assert_eq!(parse_point("point", "18:996").unwrap(), (18.0, 996.0));
        assert!(parse_point("point", "18,996")
            .unwrap_err()
            .to_string()
            .contains("write N:X"));
        let csv = "# from codahale/usl\nN,X\n1,65\n18 996\n36;1652\n";
        assert_eq!(
            parse_csv("p.csv", csv).unwrap(),
            vec![(1.0, 65.0), (18.0, 996.0), (36.0, 1652.0)]
        );
        let e = parse_csv("p.csv", "1,65\nx,y\n").unwrap_err().to_string();
        assert!(e.starts_with("p.csv: line 2:"), "{e}");
        assert!(parse_csv("p.csv", "N,X\n").is_err());
    }
}
