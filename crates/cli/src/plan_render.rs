//! Printing plans: comfy-table tables with the notes after them on stdout,
//! warnings on stderr; or one JSON document (an array for `plan all`).

use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use stackbench_plan::report::Report;

use stackbench_plan::input::Output;

/// Prints the outputs as tables or JSON.
pub fn print(outputs: &[Output], json: bool) -> anyhow::Result<()> {
    for o in outputs {
        for w in &o.report.warnings {
            eprintln!("stackbench: warning: {w}");
        }
    }
    if json {
        let text = match outputs {
            [one] => one.json.clone(),
            many => {
                let items: Vec<String> = many.iter().map(|o| indent(&o.json)).collect();
                format!("[\n{}\n]", items.join(",\n"))
            }
        };
        println!("{text}");
        return Ok(());
    }
    let blocks: Vec<String> = outputs.iter().map(|o| human(&o.report)).collect();
    print!("{}", blocks.join("\n"));
    Ok(())
}

/// A JSON document indented one level, as an element of an array.
fn indent(json: &str) -> String {
    json.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The human form of one report.
pub fn human(report: &Report) -> String {
    let mut out = format!("{}\n", report.title);
    for t in &report.tables {
        if let Some(caption) = &t.caption {
            out.push_str(&format!("{caption}\n"));
        }
        let mut table = Table::new();
        table
            .load_style(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_header(&t.header);
        for row in &t.rows {
            table.add_row(row);
        }
        out.push_str(&format!("{table}\n"));
    }
    for note in &report.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}
