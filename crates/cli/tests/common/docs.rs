//! The user documentation as data: `README.md` and `docs/*.md`, their fenced
//! blocks and their relative links, read by hand (no Markdown crate: the
//! only syntax that matters here is the fence and the link target).

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

/// `README.md` and every `docs/*.md`, sorted, as (path from the root, text).
pub fn pages() -> Vec<(String, String)> {
    let root = root();
    let mut names = vec!["README.md".to_owned()];
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| {
            e.expect("docs/ entry")
                .file_name()
                .into_string()
                .expect("a UTF-8 name")
        })
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    names.extend(docs);
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(root.join(&name))
                .unwrap_or_else(|e| panic!("read {name}: {e}"));
            (name, text)
        })
        .collect()
}

/// One fenced code block.
#[derive(Debug, Clone)]
pub struct Block {
    /// `README.md` or `docs/…`.
    pub page: String,
    /// 1-based line of the opening fence.
    pub line: usize,
    /// The words of the info string (`sh runnable` → `["sh", "runnable"]`).
    pub info: Vec<String>,
    pub body: String,
}

impl Block {
    pub fn language(&self) -> &str {
        self.info.first().map_or("", String::as_str)
    }

    pub fn is_runnable(&self) -> bool {
        self.language() == "sh" && self.info.iter().any(|w| w == "runnable")
    }

    pub fn place(&self) -> String {
        format!("{}:{}", self.page, self.line)
    }
}

/// The fenced blocks of one page. A fence is three or more backticks at the
/// start of a line; the block ends at a line of at least as many backticks.
pub fn blocks(page: &str, text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<(usize, usize, Vec<String>, String)> = None;
    for (index, line) in text.lines().enumerate() {
        let ticks = line.chars().take_while(|&c| c == '`').count();
        match &mut open {
            None if ticks >= 3 => {
                let info = line[ticks..]
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                open = Some((index + 1, ticks, info, String::new()));
            }
            None => {}
            Some((start, fence, info, body)) => {
                if ticks >= *fence && line[ticks..].trim().is_empty() {
                    found.push(Block {
                        page: page.to_owned(),
                        line: *start,
                        info: std::mem::take(info),
                        body: std::mem::take(body),
                    });
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "{page}: a code fence is never closed");
    found
}

/// Every block of every page.
pub fn all_blocks() -> Vec<Block> {
    pages()
        .iter()
        .flat_map(|(page, text)| blocks(page, text))
        .collect()
}

/// The targets of `[text](target)` links that point into the repository
/// (no scheme, no bare anchor), with the line each sits on.
pub fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut in_fence = false;
    for (index, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = &after[..end];
            if !target.contains("://") && !target.starts_with('#') && !target.starts_with("mailto:")
            {
                links.push((index + 1, target.to_owned()));
            }
            rest = &after[end..];
        }
    }
    links
}

/// The shell lines of a block with `\` continuations joined.
pub fn shell_lines(body: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in body.lines() {
        if let Some(head) = line.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
        } else {
            current.push_str(line);
            lines.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// Each `portcullis SUBCOMMAND [NESTED] …` invocation in a shell line: the
/// command words and the `--flags` given to portcullis itself (up to a lone
/// `--`, which starts the wrapped command, or the end of the command).
pub fn invocations(line: &str) -> Vec<(Vec<String>, Vec<String>)> {
    if line.trim_start().starts_with('#') {
        return Vec::new();
    }
    let code = line.split(" #").next().unwrap_or(line);
    let words: Vec<&str> = code.split_whitespace().collect();
    let mut found = Vec::new();
    for (at, word) in words.iter().enumerate() {
        if *word != "portcullis" {
            continue;
        }
        let mut command: Vec<String> = Vec::new();
        let mut flags = Vec::new();
        for next in &words[at + 1..] {
            if matches!(
                *next,
                "--" | "|" | "||" | "&&" | ";" | ">" | "<" | "2>" | "}"
            ) || next.starts_with('>')
                || next.starts_with('<')
            {
                break;
            }
            if let Some(flag) = next.strip_prefix("--") {
                flags.push(format!("--{}", flag.split('=').next().unwrap_or(flag)));
            } else if flags.is_empty()
                && command.len() < 2
                && next.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                && (command.is_empty() || matches!(command[0].as_str(), "policy" | "audit"))
            {
                command.push((*next).to_owned());
            }
        }
        if !command.is_empty() {
            found.push((command, flags));
        }
    }
    found
}
