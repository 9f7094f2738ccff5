//! The text of one shared file (`~/.aws/config` or `~/.aws/credentials`) read as the AWS SDKs
//! read it: sections by their raw header, each a map of lowercased keys to values.
//!
//! The rules, line by line (a line that breaks one is an error, never a line skipped: a
//! skipped header would give its keys to the section above it):
//! - blank lines, and lines whose first character is `#` or `;`, are skipped;
//! - `[header]`: a comment (`#` or `;`, anywhere) is cut off, and what is left must end in `]`;
//!   a header seen before in the file continues that section;
//! - `key = value`: split at the first `=`, both trimmed, the key lowercased; a comment is cut
//!   off only where `#` or `;` follows whitespace (`a=b;c` is `b;c`); the last of a repeated
//!   key wins;
//! - a line that starts with whitespace continues the property above it: appended to its value
//!   after a newline, trimmed, comments and all; under a property whose value is empty (`s3 =`)
//!   each such line must be a `key = value` of its own (a nested setting).

use std::collections::HashMap;

/// The sections of one file, in the order their headers first appear.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub(crate) sections: Vec<Section>,
}

/// One section: its header as written between the brackets, and its properties.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Section {
    /// Between the brackets, comment cut off, not yet trimmed.
    pub(crate) header: String,
    /// Lowercased keys; a continued value holds its lines joined by `\n`.
    pub(crate) properties: HashMap<String, String>,
}

/// Why a file cannot be read as a shared file: the line (from 1) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub(crate) line: usize,
    pub(crate) problem: &'static str,
}

impl core::fmt::Display for ParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "line {}: {}", self.line, self.problem)
    }
}

const WHITESPACE: &[char] = &[' ', '\t'];
const COMMENT: &[char] = &['#', ';'];

/// Where the parser is: in which section, after which property.
struct At {
    /// Index into `sections`.
    section: usize,
    /// The property continuation lines extend, and whether it opened a nested block.
    property: Option<(String, bool)>,
}

/// Reads `text` as a shared file.
pub(crate) fn parse(text: &str) -> Result<Parsed, ParseError> {
    let mut parsed = Parsed::default();
    let mut at: Option<At> = None;
    for (index, line) in text.lines().enumerate() {
        let error = |problem| ParseError {
            line: index + 1,
            problem,
        };
        if line.trim_matches(WHITESPACE).is_empty() || line.starts_with(COMMENT) {
            continue;
        }
        if line.starts_with('[') {
            let header = cut_comment(line, false)
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .ok_or_else(|| error("a profile's header must end with ']'"))?;
            let section = match parsed.sections.iter().position(|s| s.header == header) {
                Some(known) => known,
                None => {
                    parsed.sections.push(Section {
                        header: header.to_owned(),
                        properties: HashMap::new(),
                    });
                    parsed.sections.len() - 1
                }
            };
            at = Some(At {
                section,
                property: None,
            });
        } else if line.starts_with(WHITESPACE) {
            let at = at
                .as_mut()
                .ok_or_else(|| error("a setting comes before any [profile] header"))?;
            let (key, nested) = at.property.as_ref().ok_or_else(|| {
                error("an indented line continues no setting (is a `key = value` line missing above it?)")
            })?;
            let continued = line.trim_matches(WHITESPACE);
            if *nested {
                property(continued).map_err(|problem| {
                    error(match problem {
                        Problem::NoEquals => "a nested setting has no '=' (write `key = value`)",
                        Problem::NoName => "a nested setting has no name before its '='",
                    })
                })?;
            }
            if let Some(value) = parsed.sections[at.section].properties.get_mut(key) {
                value.push('\n');
                value.push_str(continued);
            }
        } else {
            let at = at
                .as_mut()
                .ok_or_else(|| error("a setting comes before any [profile] header"))?;
            let (key, value) = property(line).map_err(|problem| {
                error(match problem {
                    Problem::NoEquals => "a setting has no '=' (write `key = value`)",
                    Problem::NoName => "a setting has no name before its '='",
                })
            })?;
            let nested = value.is_empty();
            parsed.sections[at.section]
                .properties
                .insert(key.clone(), value);
            at.property = Some((key, nested));
        }
    }
    Ok(parsed)
}

/// What is wrong with a `key = value` line.
enum Problem {
    NoEquals,
    NoName,
}

/// A property line's key (lowercased) and value, its comment cut off.
fn property(line: &str) -> Result<(String, String), Problem> {
    let line = cut_comment(line, true);
    let (key, value) = line.split_once('=').ok_or(Problem::NoEquals)?;
    let key = key.trim_matches(WHITESPACE);
    if key.is_empty() {
        return Err(Problem::NoName);
    }
    Ok((
        key.to_ascii_lowercase(),
        value.trim_matches(WHITESPACE).to_owned(),
    ))
}

/// `line` trimmed, without its comment: from the first `#` or `;` (on a property line, only
/// one that follows whitespace).
fn cut_comment(line: &str, after_whitespace: bool) -> &str {
    let line = line.trim_matches(WHITESPACE);
    let mut previous: Option<char> = None;
    for (at, c) in line.char_indices() {
        if COMMENT.contains(&c) && (!after_whitespace || previous.is_some_and(char::is_whitespace))
        {
            return line[..at].trim_matches(WHITESPACE);
        }
        previous = Some(c);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sections of `text`, as (header, sorted properties).
    fn sections(text: &str) -> Vec<(String, Vec<(String, String)>)> {
        parse(text)
            .expect("parses")
            .sections
            .into_iter()
            .map(|s| {
                let mut p: Vec<_> = s.properties.into_iter().collect();
                p.sort();
                (s.header, p)
            })
            .collect()
    }

    fn one(header: &str, props: &[(&str, &str)]) -> (String, Vec<(String, String)>) {
        let mut p: Vec<(String, String)> = props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        p.sort();
        (header.to_owned(), p)
    }

    fn fails(text: &str) -> ParseError {
        parse(text).expect_err("refused")
    }

    #[test]
    fn empty_files_and_empty_sections_and_blank_lines() {
        assert_eq!(sections(""), vec![]);
        assert_eq!(sections("\n \t\n"), vec![]);
        assert_eq!(
            sections("[a]\n\n[b]\n  \n\t\n"),
            vec![one("a", &[]), one("b", &[])]
        );
    }

    #[test]
    fn a_comment_after_a_header_is_cut_off_with_or_without_a_space() {
        // The defect this parser was written for: `[prod]   # production account` read as no
        // header at all gave prod's keys to the section above it.
        let text = "[default]\naws_access_key_id = DEFAULT\n[prod]   # production account\naws_access_key_id = PROD\n";
        assert_eq!(
            sections(text),
            vec![
                one("default", &[("aws_access_key_id", "DEFAULT")]),
                one("prod", &[("aws_access_key_id", "PROD")])
            ]
        );
        assert_eq!(sections("[a]#c\n[b];c\n[c] ; c\n").len(), 3);
        assert_eq!(sections("[profile x]# the x")[0].0, "profile x");
    }

    #[test]
    fn a_header_that_does_not_end_in_a_bracket_is_an_error_never_a_line_skipped() {
        assert_eq!(
            fails("[default]\na = b\n[prod\nc = d\n"),
            ParseError {
                line: 3,
                problem: "a profile's header must end with ']'"
            }
        );
        assert_eq!(fails("[prod] junk\n").line, 1);
        // A comment character inside the brackets cuts the header short.
        assert_eq!(fails("[pro#d]\n").line, 1);
        assert_eq!(fails("[").line, 1);
    }

    #[test]
    fn comment_lines_start_at_the_first_character() {
        assert_eq!(
            sections("# top\n; top\n[a]\n#x = 1\n;y = 2\nz = 3\n"),
            vec![one("a", &[("z", "3")])]
        );
        // An indented `#` line is not a comment line: it continues the setting above it.
        assert_eq!(
            sections("[a]\nk = v\n  # note\n"),
            vec![one("a", &[("k", "v\n# note")])]
        );
    }

    #[test]
    fn a_comment_after_a_value_needs_whitespace_before_it() {
        assert_eq!(
            sections("[a]\nregion = eu-west-1 # Ireland\nb = x;y\nc = x#y\nd = x\t;y\ne = # all comment\n"),
            vec![one(
                "a",
                &[
                    ("region", "eu-west-1"),
                    ("b", "x;y"),
                    ("c", "x#y"),
                    ("d", "x"),
                    ("e", "")
                ]
            )]
        );
    }

    #[test]
    fn keys_are_lowercased_and_trimmed_values_keep_case_equals_and_unicode() {
        assert_eq!(
            sections(
                "[a]\nAWS_Access_Key_ID\t=  AKID  \nurl = http://x/?a=b\nname = ü ñ\nempty =\n"
            ),
            vec![one(
                "a",
                &[
                    ("aws_access_key_id", "AKID"),
                    ("url", "http://x/?a=b"),
                    ("name", "ü ñ"),
                    ("empty", "")
                ]
            )]
        );
    }

    #[test]
    fn settings_need_a_profile_an_equals_sign_and_a_name() {
        assert_eq!(
            fails("a = b\n"),
            ParseError {
                line: 1,
                problem: "a setting comes before any [profile] header"
            }
        );
        assert_eq!(
            fails("[a]\nno equals here\n").problem,
            "a setting has no '=' (write `key = value`)"
        );
        assert_eq!(
            fails("[a]\n= value\n").problem,
            "a setting has no name before its '='"
        );
        assert_eq!(
            fails("  continued\n").problem,
            "a setting comes before any [profile] header"
        );
    }

    #[test]
    fn continuation_lines_extend_the_value_above_and_need_one() {
        assert_eq!(
            sections("[a]\nk = first\n  second  \n\tthird ; kept\nl = z\n"),
            vec![one(
                "a",
                &[("k", "first\nsecond\nthird ; kept"), ("l", "z")]
            )]
        );
        assert!(fails("[a]\n  orphan\n")
            .problem
            .starts_with("an indented line continues no setting"));
        // A header starts over: a continuation right after it has nothing to continue.
        assert_eq!(fails("[a]\nk = v\n[b]\n  orphan\n").line, 4);
    }

    #[test]
    fn an_empty_value_opens_a_block_of_nested_settings() {
        assert_eq!(
            sections(
                "[a]\ns3 =\n  endpoint_url = http://x\n\n  addressing_style = path\nregion = r\n"
            ),
            vec![one(
                "a",
                &[
                    ("s3", "\nendpoint_url = http://x\naddressing_style = path"),
                    ("region", "r")
                ]
            )]
        );
        assert_eq!(
            fails("[a]\ns3 =\n  not a setting\n"),
            ParseError {
                line: 3,
                problem: "a nested setting has no '=' (write `key = value`)"
            }
        );
        assert_eq!(
            fails("[a]\ns3 =\n  = x\n").problem,
            "a nested setting has no name before its '='"
        );
        // Any name goes in a nested block.
        assert_eq!(
            sections("[a]\ns3 =\n  in valid = x\n")[0].1[0].1,
            "\nin valid = x"
        );
    }

    #[test]
    fn a_header_seen_again_continues_its_section_and_the_last_value_wins() {
        assert_eq!(
            sections("[a]\nk = 1\nK = 2\n[b]\nx = y\n[a]\nk = 3\nm = 4\n"),
            vec![one("a", &[("k", "3"), ("m", "4")]), one("b", &[("x", "y")])]
        );
        // Raw headers differ: two sections here (the file's reader merges them by name).
        assert_eq!(sections("[profile a]\n[profile  a]\n").len(), 2);
    }

    #[test]
    fn windows_line_endings_are_read() {
        assert_eq!(
            sections("[a]\r\nk = v\r\n  more\r\n"),
            vec![one("a", &[("k", "v\nmore")])]
        );
    }
}
