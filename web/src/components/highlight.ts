// The highlighter, in its own chunk: highlight.js's core and the languages a tool's world is
// mostly made of.
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import typescript from "highlight.js/lib/languages/typescript";
import yaml from "highlight.js/lib/languages/yaml";
import markdown from "highlight.js/lib/languages/markdown";
import xml from "highlight.js/lib/languages/xml";
import css from "highlight.js/lib/languages/css";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";

for (const [name, lang] of Object.entries({
  bash, javascript, json, python, rust, typescript, yaml, markdown, xml, css, go, ini,
}))
  hljs.registerLanguage(name, lang);
hljs.registerAliases(["sh", "shell", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["rs"], { languageName: "rust" });
hljs.registerAliases(["yml"], { languageName: "yaml" });
hljs.registerAliases(["md"], { languageName: "markdown" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["toml"], { languageName: "ini" });

const EXT: Record<string, string> = {
  rs: "rust", ts: "typescript", tsx: "typescript", js: "javascript", mjs: "javascript",
  py: "python", json: "json", md: "markdown", yml: "yaml", yaml: "yaml", sh: "bash",
  toml: "ini", html: "xml", css: "css", go: "go",
};

/// The language of a file, by its extension.
export function languageOf(path: string): string | undefined {
  return EXT[path.split(".").pop()?.toLowerCase() ?? ""];
}

export function highlight(element: HTMLElement) {
  const lang = element.dataset.lang;
  if (lang && hljs.getLanguage(lang)) {
    element.innerHTML = hljs.highlight(element.textContent ?? "", { language: lang }).value;
  }
  element.classList.add("hljs");
}

/// Highlighted HTML for one line or block of code in a known language.
export function highlightText(text: string, lang: string): string | null {
  if (!hljs.getLanguage(lang)) return null;
  return hljs.highlight(text, { language: lang, ignoreIllegals: true }).value;
}
