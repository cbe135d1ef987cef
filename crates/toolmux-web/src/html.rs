//! Bounded HTML: what `url_fetch` does with a page before (or instead of) readability and htmd.
//!
//! Both libraries walk the page's tree recursively, so a deep tree overflows the stack of the
//! thread they run on, and that aborts the whole process. The tree is not the markup: html5ever's
//! tree builder re-opens misnested formatting elements in every new block
//! (`<div><b id=1></div><div><b id=2></div>…` nests a little deeper at each step, quadratic in
//! elements), and puts implied elements around table cells. So no scan of the tags can say how
//! deep the tree will be; the tree builder itself can. A page is first parsed by html5ever (the
//! version dom_smoothie uses, with its options) into a tree of indexes ([`ShapeSink`]), fed in
//! small pieces so that the parse stops as soon as the tree is too deep, has too many elements,
//! costs too many moves, or the caller has gone. Only a page within the limits goes on to
//! readability and htmd, on a thread whose stack holds that depth many times over. Any other
//! page becomes plain text from html5ever's tokenizer alone, which builds no tree: linear time,
//! memory the size of its text.
//!
//! The work is bounded rather than interrupted: readability and htmd cannot be stopped midway,
//! but with at most [`MAX_MARKDOWN_HTML_BYTES`] of input, [`MAX_ELEMENTS`] elements and
//! [`MAX_DEPTH`] levels they finish in well under a second; everything before and after them
//! checks the caller's cancellation flag.

use std::borrow::Cow;
use std::cell::{Cell, Ref, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::tree_builder::TreeBuilderOpts;
use html5ever::{Attribute, ParseOpts, QualName, local_name, ns};

/// The largest HTML readability and htmd are given; a larger page becomes plain text.
/// Readability's scoring is more than linear in the page, and its memory many times the page.
pub const MAX_MARKDOWN_HTML_BYTES: usize = 1024 * 1024;

/// The deepest tree readability and htmd are given. Browsers stop nesting at 512 too
/// (Blink's `kMaximumHTMLParserDOMTreeDepth`); no real page comes near it.
pub const MAX_DEPTH: usize = 512;

/// The most nodes (elements, comments) of a page readability and htmd are given. A megabyte of
/// ordinary HTML has some 20,000 elements.
pub const MAX_ELEMENTS: usize = 60_000;

/// The most the squares of the depths of all the nodes of a page may add up to for
/// readability. Its handling of nested `<div>`s looks at each one's subtree and ancestors, so
/// a chain of `d` of them costs it about `d³` (a chain of 500, 5 KB of markup, took 1.6 s in a
/// release build; 60 of them 13 s), which is what this sum grows with. An ordinary megabyte of
/// HTML (20,000 elements some 20 deep) sums to under 10 million; at this limit the worst page
/// renders in about 2 s.
pub const MAX_DEPTH_SQUARES: usize = 50_000_000;

/// The most tree operations (nodes made, appended, moved) the measuring parse does: the
/// adoption agency moves a block's children on every misnested end tag, which an input can
/// make quadratic without adding elements.
pub const MAX_TREE_OPERATIONS: usize = 1_000_000;

/// The stack of the thread readability and htmd run on. Each level of the tree costs them a few
/// frames (a few kilobytes unoptimised); at [`MAX_DEPTH`] this leaves a wide margin. It is
/// address space: only the pages touched are memory.
pub const RENDER_STACK_BYTES: usize = 256 * 1024 * 1024;

/// How much input the parsers take between two looks at the limits and the cancellation flag.
const PIECE_BYTES: usize = 4 * 1024;

/// How many of the fetcher's renders are running now.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// How many of the fetcher's render threads are running now, the ones whose fetch gave up
/// included: how a test (or a look at a busy process) sees that they stop.
pub fn renders_running() -> usize {
    RUNNING.load(Ordering::SeqCst)
}

/// Counts one of the fetcher's renders as running while it lives (a panic included).
pub(crate) struct Running;

impl Running {
    pub(crate) fn start() -> Self {
        RUNNING.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The caller stopped waiting; the work stopped too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// A page as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The page's title.
    pub title: Option<String>,
    /// Markdown of the main content, or the page's plain text (see `markdown`).
    pub content: String,
    /// True when `content` is Markdown; false when the page was over a limit and is plain text.
    pub markdown: bool,
    /// Why the page is plain text, when it is.
    pub note: Option<String>,
}

/// Renders `html` (fetched from `url`) on a thread with a stack sized for [`MAX_DEPTH`], and
/// waits for it. For callers outside the fetcher (a benchmark, a test); the fetcher runs the
/// same work on a thread it can abandon at its deadline.
pub fn render_html(html: &str, url: &str) -> Rendered {
    let never = AtomicBool::new(false);
    let rendered = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("html-render".into())
            .stack_size(RENDER_STACK_BYTES)
            .spawn_scoped(scope, || render_on_this_thread(html, url, &never))
            .map(|thread| thread.join())
    });
    match rendered {
        Ok(Ok(Ok(rendered))) => rendered,
        // Not cancelled (nobody sets `never`), and every library call inside is caught: what
        // is left is a thread that could not start or a panic in this crate's own code; the
        // plain text never needs the deep stack.
        Ok(Ok(Err(Cancelled))) | Ok(Err(_)) | Err(_) => {
            let (title, text) = plain_text(html, &never).unwrap_or_default();
            Rendered {
                title,
                content: text,
                markdown: false,
                note: Some("the page could not be converted to Markdown".to_string()),
            }
        }
    }
}

/// The work of [`render_html`] on the current thread, which must have a stack of
/// [`RENDER_STACK_BYTES`]. Stops with [`Cancelled`] when `cancel` is set.
pub(crate) fn render_on_this_thread(
    html: &str,
    url: &str,
    cancel: &AtomicBool,
) -> Result<Rendered, Cancelled> {
    if html.len() > MAX_MARKDOWN_HTML_BYTES {
        let why = format!(
            "the page is larger than {} KiB of HTML",
            MAX_MARKDOWN_HTML_BYTES / 1024
        );
        return as_plain_text(html, why, cancel);
    }
    // NUL is no text in HTML (the parser drops it, or makes it U+FFFD), but a page of them
    // costs readability a few hundred bytes each: a megabyte took 260 MB.
    let html: Cow<'_, str> = if html.contains('\0') {
        Cow::Owned(html.replace('\0', ""))
    } else {
        Cow::Borrowed(html)
    };
    let html = html.as_ref();
    if let Some(why) = over_limits(html, cancel)? {
        return as_plain_text(html, why, cancel);
    }
    check(cancel)?;
    let article = catch_unwind(AssertUnwindSafe(|| {
        dom_smoothie::Readability::new(html, Some(url), None)
            .or_else(|_| dom_smoothie::Readability::new(html, None, None))
            .and_then(|mut r| r.parse())
            .map(|article| (article.title, article.content.to_string()))
    }));
    let (title, main_html) = match article {
        Ok(Ok((title, content))) => (Some(title).filter(|t| !t.trim().is_empty()), content),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "no article found; converting the whole page");
            (None, html.to_string())
        }
        Err(_) => {
            tracing::warn!(
                url,
                "readability panicked on a page; returning its plain text"
            );
            return as_plain_text(
                html,
                "the page could not be read as an article".into(),
                cancel,
            );
        }
    };
    check(cancel)?;
    // Readability's output is parsed again by htmd: it is a different document, so it is
    // measured again (it is seldom larger than the page, but it is built by rules, not parsed).
    if let Some(why) = over_limits(&main_html, cancel)? {
        let (_, text) = plain_text(&main_html, cancel)?;
        return Ok(Rendered {
            title,
            content: text,
            markdown: false,
            note: Some(why),
        });
    }
    let markdown = catch_unwind(AssertUnwindSafe(|| converter().convert(&main_html)));
    match markdown {
        Ok(Ok(markdown)) => Ok(Rendered {
            title,
            content: markdown.trim().to_string(),
            markdown: true,
            note: None,
        }),
        // htmd fails only on I/O of its own writer; the text is shown rather than lost, and the
        // log says why.
        Ok(Err(e)) => {
            tracing::warn!(error = %e, url, "converting a page to Markdown failed");
            as_plain_text(
                &main_html,
                "the page could not be converted to Markdown".into(),
                cancel,
            )
        }
        Err(_) => {
            tracing::warn!(url, "htmd panicked on a page; returning its plain text");
            as_plain_text(
                &main_html,
                "the page could not be converted to Markdown".into(),
                cancel,
            )
        }
    }
}

/// The tags that are page chrome or code, never content, when the whole page is converted.
const CHROME: [&str; 12] = [
    "script", "style", "noscript", "nav", "header", "footer", "aside", "form", "iframe", "svg",
    "button", "template",
];

/// The converter, built once: it holds only its rules, and building them is most of the cost
/// of converting a short page. Scripting is off, as in dom_smoothie's parse, so the tree htmd
/// builds is the one the measuring parse measured (`<noscript>` parsed as markup).
fn converter() -> &'static htmd::HtmlToMarkdown {
    static CONVERTER: std::sync::LazyLock<htmd::HtmlToMarkdown> = std::sync::LazyLock::new(|| {
        htmd::HtmlToMarkdown::builder()
            .skip_tags(CHROME.to_vec())
            .scripting_enabled(false)
            .build()
    });
    &CONVERTER
}

fn check(cancel: &AtomicBool) -> Result<(), Cancelled> {
    if cancel.load(Ordering::Relaxed) {
        Err(Cancelled)
    } else {
        Ok(())
    }
}

fn as_plain_text(html: &str, why: String, cancel: &AtomicBool) -> Result<Rendered, Cancelled> {
    let (title, text) = plain_text(html, cancel)?;
    Ok(Rendered {
        title,
        content: text,
        markdown: false,
        note: Some(why),
    })
}

/// `s` in pieces of at most about `size` bytes, cut at character boundaries.
fn pieces(s: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

// ---------------------------------------------------------------------------------------------
// The measuring parse.

/// What the measuring parse counts, shared between the sink (inside the parser) and the loop
/// that feeds the parser.
#[derive(Default)]
struct Counts {
    nodes: Cell<usize>,
    operations: Cell<usize>,
    /// The deepest append seen so far. A moved subtree keeps its old depths until the final
    /// count, so this can be low during the parse; the final count is exact.
    deepest: Cell<usize>,
    /// The squares of the nodes' depths added up, as they were appended (exact after the
    /// final count).
    depth_squares: Cell<usize>,
}

impl Counts {
    fn over(&self) -> Option<String> {
        if self.deepest.get() > MAX_DEPTH {
            Some(format!(
                "the page nests elements more than {MAX_DEPTH} deep"
            ))
        } else if self.nodes.get() > MAX_ELEMENTS {
            Some(format!("the page has more than {MAX_ELEMENTS} elements"))
        } else if self.depth_squares.get() > MAX_DEPTH_SQUARES {
            Some("the page nests too many of its elements too deep".to_string())
        } else if self.operations.get() > MAX_TREE_OPERATIONS {
            Some("the page's markup is too tangled to rebuild its tree".to_string())
        } else {
            None
        }
    }
}

/// Why `html` is over a limit (too deep, too many elements, too much tree work), or `None`
/// when its tree, as html5ever builds it, is within them.
pub(crate) fn over_limits(html: &str, cancel: &AtomicBool) -> Result<Option<String>, Cancelled> {
    let counts = Rc::new(Counts::default());
    let sink = ShapeSink::new(Rc::clone(&counts));
    let opts = ParseOpts {
        tokenizer: TokenizerOpts::default(),
        tree_builder: TreeBuilderOpts {
            scripting_enabled: false,
            ..Default::default()
        },
    };
    let mut parser = html5ever::parse_document(sink, opts);
    for piece in pieces(html, PIECE_BYTES) {
        check(cancel)?;
        parser.process(StrTendril::from_slice(piece));
        if let Some(why) = counts.over() {
            return Ok(Some(why));
        }
    }
    let sink = parser.finish();
    let (deepest, depth_squares) = sink.depths();
    counts.deepest.set(deepest);
    counts.depth_squares.set(depth_squares);
    Ok(counts.over())
}

const NONE: u32 = u32::MAX;

/// One node of the measured tree: its links and, for elements, its name (the tree builder
/// asks for it).
struct Node {
    name: QualName,
    parent: u32,
    first_child: u32,
    last_child: u32,
    previous: u32,
    next: u32,
    /// Depth when last appended (0 for the document).
    depth: u32,
    /// A template's contents (a fragment); for a fragment, the template it belongs to, which
    /// counts as its parent for depth.
    template: u32,
    annotation_xml_integration_point: bool,
}

impl Node {
    fn new(name: QualName) -> Self {
        Self {
            name,
            parent: NONE,
            first_child: NONE,
            last_child: NONE,
            previous: NONE,
            next: NONE,
            depth: 0,
            template: NONE,
            annotation_xml_integration_point: false,
        }
    }
}

/// A tree builder's sink that keeps only the tree's shape: what it costs is a few words per
/// node, and it counts what the limits need.
struct ShapeSink {
    nodes: RefCell<Vec<Node>>,
    counts: Rc<Counts>,
}

fn no_name() -> QualName {
    QualName::new(None, ns!(), local_name!(""))
}

impl ShapeSink {
    fn new(counts: Rc<Counts>) -> Self {
        Self {
            nodes: RefCell::new(vec![Node::new(no_name())]),
            counts,
        }
    }

    fn add(&self, node: Node) -> u32 {
        let mut nodes = self.nodes.borrow_mut();
        let id = u32::try_from(nodes.len()).unwrap_or(NONE - 1);
        nodes.push(node);
        self.counts.nodes.set(nodes.len());
        self.operation(1);
        id
    }

    fn operation(&self, n: usize) {
        self.counts
            .operations
            .set(self.counts.operations.get().saturating_add(n));
    }

    /// Takes `id` out of its parent's children.
    fn detach(nodes: &mut [Node], id: u32) {
        let (parent, previous, next) = {
            let node = &nodes[id as usize];
            (node.parent, node.previous, node.next)
        };
        if parent == NONE {
            return;
        }
        if previous == NONE {
            nodes[parent as usize].first_child = next;
        } else {
            nodes[previous as usize].next = next;
        }
        if next == NONE {
            nodes[parent as usize].last_child = previous;
        } else {
            nodes[next as usize].previous = previous;
        }
        let node = &mut nodes[id as usize];
        node.parent = NONE;
        node.previous = NONE;
        node.next = NONE;
    }

    /// Puts `id` under `parent`, before `before` (or last when `before` is `NONE`).
    fn link(&self, parent: u32, id: u32, before: u32) {
        let mut guard = self.nodes.borrow_mut();
        let nodes = guard.as_mut_slice();
        Self::detach(nodes, id);
        let previous = if before == NONE {
            nodes[parent as usize].last_child
        } else {
            nodes[before as usize].previous
        };
        {
            let node = &mut nodes[id as usize];
            node.parent = parent;
            node.previous = previous;
            node.next = before;
        }
        if previous == NONE {
            nodes[parent as usize].first_child = id;
        } else {
            nodes[previous as usize].next = id;
        }
        if before == NONE {
            nodes[parent as usize].last_child = id;
        } else {
            nodes[before as usize].previous = id;
        }
        let depth = nodes[parent as usize].depth.saturating_add(1);
        nodes[id as usize].depth = depth;
        let depth = depth as usize;
        if depth > self.counts.deepest.get() {
            self.counts.deepest.set(depth);
        }
        self.counts.depth_squares.set(
            self.counts
                .depth_squares
                .get()
                .saturating_add(depth.saturating_mul(depth)),
        );
        self.operation(1);
    }

    /// The depth of the deepest node of the final tree and the sum of the squares of all their
    /// depths,
    /// counted from the links (one pass; a node's depth is its parent's plus one, worked out
    /// with an explicit path, never by recursion).
    fn depths(&self) -> (usize, usize) {
        let nodes = self.nodes.borrow();
        let mut depth: Vec<u32> = vec![NONE; nodes.len()];
        let mut path = Vec::new();
        let mut deepest = 0;
        let mut sum = 0usize;
        for start in 0..nodes.len() {
            let mut at = start as u32;
            // Up to a node already counted, or a root (the document, or a detached node).
            while depth[at as usize] == NONE {
                path.push(at);
                let node = &nodes[at as usize];
                let up = if node.parent != NONE {
                    node.parent
                } else if node.template != NONE && node.name == no_name() {
                    node.template
                } else {
                    NONE
                };
                // A fragment's template can only be above it; a loop would be a bug of this
                // sink, and stopping keeps even that from hanging.
                if up == NONE || path.len() > nodes.len() {
                    depth[at as usize] = 0;
                    path.pop();
                    break;
                }
                at = up;
            }
            let mut below = depth[at as usize];
            while let Some(node) = path.pop() {
                below = below.saturating_add(1);
                depth[node as usize] = below;
            }
            deepest = deepest.max(depth[start] as usize);
            let d = depth[start] as usize;
            sum = sum.saturating_add(d.saturating_mul(d));
        }
        (deepest, sum)
    }
}

impl TreeSink for ShapeSink {
    type Handle = u32;
    type Output = Self;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Self {
        self
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {
        // Errors are how hostile pages look, and how many ordinary ones do: nothing to keep.
    }

    fn get_document(&self) -> u32 {
        0
    }

    fn elem_name<'a>(&'a self, target: &'a u32) -> Ref<'a, QualName> {
        Ref::map(self.nodes.borrow(), |nodes| &nodes[*target as usize].name)
    }

    fn create_element(&self, name: QualName, _attrs: Vec<Attribute>, flags: ElementFlags) -> u32 {
        let mut node = Node::new(name);
        node.annotation_xml_integration_point = flags.mathml_annotation_xml_integration_point;
        let id = self.add(node);
        if flags.template {
            let mut contents = Node::new(no_name());
            contents.template = id;
            let contents = self.add(contents);
            self.nodes.borrow_mut()[id as usize].template = contents;
        }
        id
    }

    fn create_comment(&self, _text: StrTendril) -> u32 {
        self.add(Node::new(no_name()))
    }

    fn create_pi(&self, _target: StrTendril, _data: StrTendril) -> u32 {
        self.add(Node::new(no_name()))
    }

    fn append(&self, parent: &u32, child: NodeOrText<u32>) {
        // Text is a leaf: it adds nothing the limits count.
        if let NodeOrText::AppendNode(child) = child {
            self.link(*parent, child, NONE);
        }
    }

    fn append_based_on_parent_node(
        &self,
        element: &u32,
        prev_element: &u32,
        child: NodeOrText<u32>,
    ) {
        let has_parent = self.nodes.borrow()[*element as usize].parent != NONE;
        if has_parent {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev_element, child);
        }
    }

    fn append_doctype_to_document(&self, _: StrTendril, _: StrTendril, _: StrTendril) {}

    fn get_template_contents(&self, target: &u32) -> u32 {
        match self.nodes.borrow()[*target as usize].template {
            NONE => *target,
            contents => contents,
        }
    }

    fn same_node(&self, x: &u32, y: &u32) -> bool {
        x == y
    }

    fn set_quirks_mode(&self, _mode: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &u32, new_node: NodeOrText<u32>) {
        if let NodeOrText::AppendNode(child) = new_node {
            let parent = self.nodes.borrow()[*sibling as usize].parent;
            if parent != NONE {
                self.link(parent, child, *sibling);
            }
        }
    }

    fn add_attrs_if_missing(&self, _target: &u32, _attrs: Vec<Attribute>) {}

    fn remove_from_parent(&self, target: &u32) {
        Self::detach(&mut self.nodes.borrow_mut(), *target);
        self.operation(1);
    }

    fn reparent_children(&self, node: &u32, new_parent: &u32) {
        // One operation per child moved (in `link`): this is the work a hostile page repeats.
        loop {
            let child = self.nodes.borrow()[*node as usize].first_child;
            if child == NONE {
                break;
            }
            self.link(*new_parent, child, NONE);
        }
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &u32) -> bool {
        self.nodes.borrow()[*handle as usize].annotation_xml_integration_point
    }
}

// ---------------------------------------------------------------------------------------------
// Plain text, from the tokenizer alone.

/// Elements that start a new line of text.
const BLOCKS: [&str; 38] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "caption",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "tr",
    "td",
    "ul",
];

/// The longest title kept.
const MAX_TITLE_CHARS: usize = 1000;

#[derive(Default)]
struct TextState {
    text: String,
    title: Option<String>,
    /// The characters of `title`, counted as they come (a title arrives in many pieces).
    title_chars: usize,
    in_title: bool,
    /// Inside `<script>`, `<style>` and their kind: their text is not the page's.
    in_code: bool,
    /// How many `<svg>`, `<math>` and `<template>` are open: their text is not shown either.
    hidden: usize,
    space: bool,
}

impl TextState {
    fn line_break(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with("\n\n") {
            self.text.push('\n');
        }
        self.space = false;
    }

    fn add(&mut self, chunk: &str) {
        if self.in_title {
            let title = self.title.get_or_insert_with(String::new);
            for c in chunk.chars().filter(|c| !c.is_control()) {
                if self.title_chars == MAX_TITLE_CHARS {
                    break;
                }
                title.push(c);
                self.title_chars += 1;
            }
            return;
        }
        if self.in_code || self.hidden > 0 {
            return;
        }
        for c in chunk.chars() {
            if c.is_whitespace() {
                self.space = true;
            } else if !c.is_control() {
                if self.space && !self.text.is_empty() && !self.text.ends_with('\n') {
                    self.text.push(' ');
                }
                self.space = false;
                self.text.push(c);
            }
        }
    }
}

#[derive(Default)]
struct TextSink {
    state: RefCell<TextState>,
}

impl TokenSink for TextSink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut state = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) => {
                let name: &str = &tag.name;
                if BLOCKS.contains(&name) {
                    state.line_break();
                }
                match (tag.kind, name) {
                    // The states a tree builder would switch the tokenizer to, so that a
                    // script's `<` or a title's tags stay text.
                    (TagKind::StartTag, "script") => {
                        state.in_code = true;
                        return TokenSinkResult::RawData(
                            html5ever::tokenizer::states::RawKind::ScriptData,
                        );
                    }
                    (
                        TagKind::StartTag,
                        "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript",
                    ) => {
                        state.in_code = true;
                        return TokenSinkResult::RawData(
                            html5ever::tokenizer::states::RawKind::Rawtext,
                        );
                    }
                    (TagKind::StartTag, "title") if state.hidden == 0 => {
                        state.in_title = state.title.is_none();
                        return TokenSinkResult::RawData(
                            html5ever::tokenizer::states::RawKind::Rcdata,
                        );
                    }
                    (TagKind::StartTag, "textarea") => {
                        return TokenSinkResult::RawData(
                            html5ever::tokenizer::states::RawKind::Rcdata,
                        );
                    }
                    (TagKind::StartTag, "plaintext") => return TokenSinkResult::Plaintext,
                    (TagKind::StartTag, "svg" | "math" | "template") if !tag.self_closing => {
                        state.hidden += 1;
                    }
                    (
                        TagKind::EndTag,
                        "script" | "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript",
                    ) => state.in_code = false,
                    (TagKind::EndTag, "title") => state.in_title = false,
                    (TagKind::EndTag, "svg" | "math" | "template") => {
                        state.hidden = state.hidden.saturating_sub(1);
                    }
                    (TagKind::StartTag, "td" | "th") | (TagKind::EndTag, "td" | "th") => {
                        state.space = true;
                    }
                    _ => {}
                }
            }
            Token::CharacterTokens(text) => state.add(&text),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// The page's title and its text: scripts, styles and embedded graphics left out, a line per
/// block, spaces collapsed. Linear in the page; stops with [`Cancelled`] when `cancel` is set.
pub(crate) fn plain_text(
    html: &str,
    cancel: &AtomicBool,
) -> Result<(Option<String>, String), Cancelled> {
    let tokenizer = Tokenizer::new(TextSink::default(), TokenizerOpts::default());
    let queue = BufferQueue::default();
    for piece in pieces(html, 64 * 1024) {
        check(cancel)?;
        queue.push_back(StrTendril::from_slice(piece));
        // The sink never asks for a script to run, so feeding only stops when the queue is
        // empty.
        let _done = tokenizer.feed(&queue);
    }
    tokenizer.end();
    let state = tokenizer.sink.state.into_inner();
    let title = state
        .title
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|t| !t.is_empty());
    Ok((title, state.text.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn over(html: &str) -> Option<String> {
        over_limits(html, &AtomicBool::new(false)).expect("not cancelled")
    }

    #[test]
    fn the_measured_depth_is_the_tree_builders_not_the_tags() {
        assert_eq!(over("<p>hello</p>"), None);
        let nested = |n: usize| format!("{}x{}", "<b>".repeat(n), "</b>".repeat(n));
        assert_eq!(over(&nested(MAX_DEPTH - 10)), None);
        assert!(over(&nested(MAX_DEPTH + 10)).is_some_and(|w| w.contains("deep")));
        // Each step is three tags deep in the markup, and the tree builder re-opens every
        // `<b>` so far in the next block: the tree is as deep as the steps are many.
        let reopened: String = (0..MAX_DEPTH + 10)
            .map(|i| format!("<div><b id={i}></div>"))
            .collect();
        let why = over(&reopened).expect("over a limit");
        assert!(why.contains("deep") || why.contains("elements"), "{why}");
    }

    #[test]
    fn many_deep_chains_are_over_the_depth_squares() {
        // Each chain is within the depth limit; together they would keep readability busy
        // for seconds.
        let chain = format!(
            "{}<p>text, text.</p>{}",
            "<div>".repeat(500),
            "</div>".repeat(500)
        );
        assert_eq!(over(&chain), None);
        let why = over(&chain.repeat(2)).expect("over a limit");
        assert!(why.contains("too deep"), "{why}");
    }

    #[test]
    fn plain_text_keeps_the_words_and_drops_the_code() {
        let (title, text) = plain_text(
            "<html><head><title> A  page </title><style>p{color:red}</style></head><body>\
             <h1>Head</h1><p>One <b>two</b> three</p><script>if (a<b) x()</script>\
             <svg><text>drawn</text></svg><p>four&amp;five</p></body></html>",
            &AtomicBool::new(false),
        )
        .expect("not cancelled");
        assert_eq!(title.as_deref(), Some("A page"));
        assert_eq!(text, "Head\n\nOne two three\n\nfour&five");
    }

    #[test]
    fn a_cancelled_render_stops() {
        let cancel = AtomicBool::new(true);
        assert_eq!(
            render_on_this_thread("<p>x</p>", "http://example.com/", &cancel),
            Err(Cancelled)
        );
    }
}
