//! A small GBNF reader and matcher for tests: does a grammar accept a text? It reads the
//! subset llama.cpp's converter and [`super::gbnf`] write (literals, classes, `.`, groups,
//! alternatives, `? * + {m,n}`), and finds every way a rule can match, memoized by
//! position, so the tests check the grammars' behaviour without loading a model.

use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Clone)]
enum Expr {
    Seq(Vec<Expr>),
    Alt(Vec<Expr>),
    Lit(Vec<char>),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Any,
    Ref(String),
    Repeat(Box<Expr>, usize, Option<usize>),
}

/// A parsed grammar.
pub(super) struct Grammar {
    rules: HashMap<String, Expr>,
}

struct Reader<'a> {
    s: &'a [char],
    i: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn skip_space(&mut self, newlines: bool) {
        while let Some(c) = self.peek() {
            if c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r')) {
                self.i += 1;
            } else if c == '#' {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
            } else {
                break;
            }
        }
    }

    fn name(&mut self) -> String {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            self.i += 1;
        }
        self.s[start..self.i].iter().collect()
    }

    fn hex(&mut self, digits: usize) -> char {
        let text: String = self.s[self.i..self.i + digits].iter().collect();
        self.i += digits;
        char::from_u32(u32::from_str_radix(&text, 16).expect("hex escape")).expect("a char")
    }

    fn char(&mut self) -> char {
        let c = self.s[self.i];
        self.i += 1;
        if c != '\\' {
            return c;
        }
        let e = self.s[self.i];
        self.i += 1;
        match e {
            'x' => self.hex(2),
            'u' => self.hex(4),
            'U' => self.hex(8),
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            '\\' | '"' | '[' | ']' => e,
            _ => panic!("unknown escape \\{e}"),
        }
    }

    fn alternatives(&mut self, nested: bool) -> Expr {
        let mut alts = vec![self.sequence(nested)];
        while self.peek() == Some('|') {
            // As llama.cpp: an alternative may start on the next line.
            self.i += 1;
            self.skip_space(true);
            alts.push(self.sequence(nested));
        }
        Expr::Alt(alts)
    }

    fn sequence(&mut self, nested: bool) -> Expr {
        let mut items = Vec::new();
        loop {
            self.skip_space(nested);
            let Some(c) = self.peek() else { break };
            let item = match c {
                '"' => {
                    self.i += 1;
                    let mut text = Vec::new();
                    while self.peek() != Some('"') {
                        text.push(self.char());
                    }
                    self.i += 1;
                    Expr::Lit(text)
                }
                '[' => {
                    self.i += 1;
                    let negated = self.peek() == Some('^');
                    if negated {
                        self.i += 1;
                    }
                    let mut ranges = Vec::new();
                    while self.peek() != Some(']') {
                        let from = self.char();
                        let to = if self.peek() == Some('-') && self.s.get(self.i + 1) != Some(&']')
                        {
                            self.i += 1;
                            self.char()
                        } else {
                            from
                        };
                        ranges.push((from, to));
                    }
                    self.i += 1;
                    Expr::Class { negated, ranges }
                }
                '.' => {
                    self.i += 1;
                    Expr::Any
                }
                '(' => {
                    self.i += 1;
                    let inner = self.alternatives(true);
                    self.skip_space(true);
                    assert_eq!(self.peek(), Some(')'), "unclosed group");
                    self.i += 1;
                    inner
                }
                c if c.is_ascii_alphanumeric() || c == '-' || c == '_' => Expr::Ref(self.name()),
                _ => break,
            };
            items.push(self.postfix(item));
        }
        Expr::Seq(items)
    }

    fn number(&mut self) -> usize {
        self.name().parse().expect("a count")
    }

    fn postfix(&mut self, item: Expr) -> Expr {
        let repeat = |min, max| Expr::Repeat(Box::new(item.clone()), min, max);
        let out = match self.peek() {
            Some('*') => repeat(0, None),
            Some('+') => repeat(1, None),
            Some('?') => repeat(0, Some(1)),
            Some('{') => {
                self.i += 1;
                let min = self.number();
                let max = if self.peek() == Some(',') {
                    self.i += 1;
                    (self.peek() != Some('}')).then(|| self.number())
                } else {
                    Some(min)
                };
                assert_eq!(self.peek(), Some('}'));
                self.i += 1;
                return repeat(min, max);
            }
            _ => return item,
        };
        self.i += 1;
        out
    }
}

impl Grammar {
    /// Read `text`; panics on anything it does not understand (a test failure).
    pub(super) fn parse(text: &str) -> Grammar {
        let chars: Vec<char> = text.chars().collect();
        let mut r = Reader { s: &chars, i: 0 };
        let mut rules = HashMap::new();
        loop {
            r.skip_space(true);
            if r.peek().is_none() {
                break;
            }
            let name = r.name();
            assert!(!name.is_empty(), "a rule name at {}", r.i);
            r.skip_space(false);
            let arrow: String = chars[r.i..r.i + 3].iter().collect();
            assert_eq!(arrow, "::=", "after {name}");
            r.i += 3;
            let body = r.alternatives(false);
            assert!(rules.insert(name.clone(), body).is_none(), "{name} twice");
        }
        let grammar = Grammar { rules };
        for expr in grammar.rules.values() {
            grammar.check_refs(expr);
        }
        grammar
    }

    fn check_refs(&self, expr: &Expr) {
        match expr {
            Expr::Seq(v) | Expr::Alt(v) => v.iter().for_each(|e| self.check_refs(e)),
            Expr::Ref(name) => assert!(self.rules.contains_key(name), "undefined rule {name}"),
            Expr::Repeat(e, ..) => self.check_refs(e),
            _ => {}
        }
    }

    /// Whether `root` matches all of `text`.
    pub(super) fn accepts(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let mut m = Matcher {
            g: self,
            s: &chars,
            memo: HashMap::new(),
        };
        m.ends(&Expr::Ref("root".into()), 0).contains(&chars.len())
    }
}

struct Matcher<'a> {
    g: &'a Grammar,
    s: &'a [char],
    memo: HashMap<(String, usize), BTreeSet<usize>>,
}

impl Matcher<'_> {
    /// Every position where `expr` can end when it starts at `at`.
    fn ends(&mut self, expr: &Expr, at: usize) -> BTreeSet<usize> {
        match expr {
            Expr::Lit(text) => {
                let end = at + text.len();
                if self.s.get(at..end) == Some(text.as_slice()) {
                    BTreeSet::from([end])
                } else {
                    BTreeSet::new()
                }
            }
            Expr::Class { negated, ranges } => match self.s.get(at) {
                Some(&c) if ranges.iter().any(|&(a, b)| a <= c && c <= b) != *negated => {
                    BTreeSet::from([at + 1])
                }
                _ => BTreeSet::new(),
            },
            Expr::Any => {
                if at < self.s.len() {
                    BTreeSet::from([at + 1])
                } else {
                    BTreeSet::new()
                }
            }
            Expr::Seq(items) => {
                let mut here = BTreeSet::from([at]);
                for item in items {
                    let mut next = BTreeSet::new();
                    for p in here {
                        next.extend(self.ends(item, p));
                    }
                    here = next;
                }
                here
            }
            Expr::Alt(alts) => {
                let mut out = BTreeSet::new();
                for alt in alts {
                    out.extend(self.ends(alt, at));
                }
                out
            }
            Expr::Ref(name) => {
                let key = (name.clone(), at);
                if let Some(done) = self.memo.get(&key) {
                    return done.clone();
                }
                let body = self.g.rules[name].clone();
                let out = self.ends(&body, at);
                self.memo.insert(key, out.clone());
                out
            }
            Expr::Repeat(item, min, max) => {
                let mut out = BTreeSet::new();
                let mut here = BTreeSet::from([at]);
                let mut seen = BTreeSet::new();
                for count in 0.. {
                    if count >= *min {
                        out.extend(here.iter().copied());
                    }
                    if max.is_some_and(|m| count >= m) || here.is_empty() {
                        break;
                    }
                    let mut next = BTreeSet::new();
                    for p in &here {
                        next.extend(self.ends(item, *p));
                    }
                    // Past the minimum, positions already reached add nothing new.
                    if count >= *min {
                        next.retain(|p| seen.insert(*p));
                    }
                    here = next;
                }
                out
            }
        }
    }
}
