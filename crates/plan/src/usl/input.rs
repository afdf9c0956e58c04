//! Reading (N, X) points: `--point 18:996` and CSV files of two columns, read
//! with the `csv` crate (N then X; separated by commas, or by semicolons, tabs
//! or blanks when the first data line has no comma; an optional header line;
//! `#` comment lines).

use crate::error::PlanError;
use crate::units::parse_number;
use stackbench_model::units;

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

/// The separator of a points file: a comma, else a semicolon, a tab or a
/// blank, whichever the first line that is not a comment holds.
fn separator(text: &str) -> u8 {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    [b',', b';', b'\t']
        .into_iter()
        .find(|s| first.as_bytes().contains(s))
        .unwrap_or(b' ')
}

/// Parses a CSV of N,X rows; `path` names the file in errors.
pub fn parse_csv(path: &str, text: &str) -> Result<Vec<(f64, f64)>, PlanError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .comment(Some(b'#'))
        .flexible(true)
        .trim(csv::Trim::All)
        .delimiter(separator(text))
        .from_reader(text.as_bytes());
    let mut points = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record
            .map_err(|e| PlanError::file(path, format!("{e}; write N,X per line, e.g. 18,996")))?;
        let cells: Vec<&str> = record.iter().filter(|c| !c.is_empty()).collect();
        let number = |t: &str| units::parse_number(t).ok();
        let parsed = match cells.as_slice() {
            [] => continue,
            [n, x, ..] => number(n).zip(number(x)),
            _ => None,
        };
        match parsed {
            Some(p) => points.push(p),
            None if i == 0 => {} // a header line
            None => {
                let line = record.position().map_or(0, |p| p.line());
                let raw = text
                    .lines()
                    .nth(line.saturating_sub(1) as usize)
                    .unwrap_or("");
                return Err(PlanError::file(
                    path,
                    format!("line {line}: '{raw}' is not N,X; each line holds concurrency and throughput, e.g. 18,996"),
                ));
            }
        }
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
        let want = vec![(1.0, 65.0), (18.0, 996.0), (36.0, 1652.0)];
        for csv in [
            "# from codahale/usl\nN,X\n1,65\n\n18, 996\n# more\n36,1652\n",
            "\"N\",\"X\"\r\n1,65\r\n18,996\r\n36,1652\r\n",
            "N;X\n1;65\n18;996\n36;1652",
            "1\t65\n18\t996\n36\t1652\n",
            "# N X\n  1  65\n18 996\n36   1652\n",
        ] {
            assert_eq!(parse_csv("p.csv", csv).unwrap(), want, "{csv}");
        }
        let e = parse_csv("p.csv", "1,65\nx,y\n").unwrap_err().to_string();
        assert!(e.starts_with("p.csv: line 2: 'x,y' is not N,X"), "{e}");
        let e = parse_csv("p.csv", "# c\nN,X\n\n1,65\n2\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.csv: line 5: '2' is not N,X"), "{e}");
        assert!(parse_csv("p.csv", "N,X\n").is_err());
    }
}
