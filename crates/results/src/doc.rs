//! A tiny document model — headings, paragraphs, lists, tables, figures — with
//! two renderers, so the HTML and Markdown reports carry the same content by
//! construction. The HTML is one self-contained file: inline CSS, figures as
//! inline SVG, no scripts and no network fetches.

/// One block of a report.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Level (1–3) and text; `id` anchors it in HTML.
    Heading {
        level: u8,
        text: String,
        id: Option<String>,
    },
    Paragraph(String),
    List(Vec<String>),
    Table {
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// A numbered figure: the SVG inline in HTML, a file beside the Markdown.
    Figure {
        number: usize,
        caption: String,
        svg: String,
        file: String,
    },
}

/// HTML-escapes text.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1040px;margin:2em auto;padding:0 1em;color:#1a1a1a;line-height:1.45}
h1{border-bottom:2px solid #0072b2;padding-bottom:.3em}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:1em 0;font-size:.92em}th,td{border:1px solid #bbb;padding:.3em .6em;text-align:left}
th{background:#eef3f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1.5em 0;text-align:center}figure svg{max-width:100%;height:auto}
figcaption{font-style:italic;margin-top:.4em}";

fn looks_numeric(cell: &str) -> bool {
    let t = cell.trim_start_matches(['+', '-', '±']);
    t.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// Renders the blocks as one self-contained HTML page.
pub fn render_html(title: &str, blocks: &[Block]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n",
        escape(title)
    );
    for block in blocks {
        match block {
            Block::Heading { level, text, id } => {
                let id = id
                    .as_ref()
                    .map_or(String::new(), |i| format!(" id=\"{}\"", escape(i)));
                out.push_str(&format!("<h{level}{id}>{}</h{level}>\n", escape(text)));
            }
            Block::Paragraph(text) => out.push_str(&format!("<p>{}</p>\n", escape(text))),
            Block::List(items) => {
                out.push_str("<ul>\n");
                for item in items {
                    out.push_str(&format!("<li>{}</li>\n", escape(item)));
                }
                out.push_str("</ul>\n");
            }
            Block::Table { header, rows } => {
                out.push_str("<table>\n<thead><tr>");
                for h in header {
                    out.push_str(&format!("<th>{}</th>", escape(h)));
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for row in rows {
                    out.push_str("<tr>");
                    for cell in row {
                        let class = if looks_numeric(cell) {
                            " class=\"num\""
                        } else {
                            ""
                        };
                        out.push_str(&format!("<td{class}>{}</td>", escape(cell)));
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody>\n</table>\n");
            }
            Block::Figure {
                number,
                caption,
                svg,
                ..
            } => {
                out.push_str(&format!(
                    "<figure id=\"figure-{number}\">\n{}\n<figcaption>Figure {number}: {}</figcaption>\n</figure>\n",
                    svg.trim(),
                    escape(caption)
                ));
            }
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn md_escape_cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// Renders the blocks as Markdown; figures link to their SVG files.
pub fn render_markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for block in blocks {
        match block {
            Block::Heading { level, text, .. } => {
                out.push_str(&format!("{} {text}\n\n", "#".repeat(*level as usize)));
            }
            Block::Paragraph(text) => out.push_str(&format!("{text}\n\n")),
            Block::List(items) => {
                for item in items {
                    out.push_str(&format!("- {item}\n"));
                }
                out.push('\n');
            }
            Block::Table { header, rows } => {
                out.push_str(&format!("| {} |\n", header.join(" | ")));
                out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
                for row in rows {
                    let cells: Vec<String> = row.iter().map(|c| md_escape_cell(c)).collect();
                    out.push_str(&format!("| {} |\n", cells.join(" | ")));
                }
                out.push('\n');
            }
            Block::Figure {
                number,
                caption,
                file,
                ..
            } => {
                out.push_str(&format!(
                    "![Figure {number}]({file})\n\n*Figure {number}: {caption}*\n\n"
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_renderers_carry_the_same_blocks() {
        let blocks = vec![
            Block::Heading {
                level: 1,
                text: "A & B".into(),
                id: Some("top".into()),
            },
            Block::Paragraph("x < y".into()),
            Block::List(vec!["one".into()]),
            Block::Table {
                header: vec!["k".into(), "v".into()],
                rows: vec![vec!["a|b".into(), "+1.0%".into()]],
            },
            Block::Figure {
                number: 1,
                caption: "Rate".into(),
                svg: "<svg></svg>".into(),
                file: "figures/figure-1.svg".into(),
            },
        ];
        let html = render_html("T", &blocks);
        assert!(html.contains("<h1 id=\"top\">A &amp; B</h1>"));
        assert!(html.contains("<p>x &lt; y</p>"));
        assert!(html.contains("<td class=\"num\">+1.0%</td>"));
        assert!(html.contains("<figcaption>Figure 1: Rate</figcaption>"));
        assert!(!html.contains("http"), "no network references");
        let md = render_markdown(&blocks);
        assert!(md.starts_with("# A & B\n"));
        assert!(md.contains("| a\\|b | +1.0% |"));
        assert!(md.contains("![Figure 1](figures/figure-1.svg)"));
    }
}
