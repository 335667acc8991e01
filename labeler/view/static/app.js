// labeler view: the page. Plain JS, no build step, nothing fetched from outside this server.
// Routes (the URL's hash): #/ the views; #/v/N?filter=F&q=TEXT&page=P a view's query list;
// #/v/N/q/QID?filter=F&q=TEXT one query (previous / next in that list);
// #/s/N?sort=COLUMN&desc=1&page=P a submission's per-query scores.
// Every API call carries the server's token, which only this page (its HTML) holds.
// Verdicts are sent to the server the moment they are made; one the server did not take is
// shown "not saved" and kept in this tab (sessionStorage) until it is sent.
"use strict";

const PAGE = 50;
const CUT = 2000;  // characters of a passage shown before "show all"
const TOKEN = document.querySelector("meta[name=labeler-token]").content;
const main = document.getElementById("main");
let views = null;
let submissions = null;
let here = {};  // the page shown: {list: [index, params]} or {query: [index, key, params]}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "onclick" || key === "onchange" || key === "onkeydown") node[key] = value;
    else if (key === "style") node.style.cssText = value;  // CSSOM: allowed by the CSP
    else if (value !== null && value !== undefined && value !== false) node.setAttribute(key, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Replace the page's content with `nodes` (arrays of them flattened).
function show(...nodes) { main.replaceChildren(...nodes.flat(Infinity)); }

async function api(path, body) {
  const headers = {"X-Labeler-Token": TOKEN};
  const options = {headers};
  if (body !== undefined) {
    Object.assign(options, {method: "POST", body: JSON.stringify(body)});
    headers["Content-Type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(path, options);
  } catch {
    throw new Error("the server does not answer (stopped?)");
  }
  const payload = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(payload.error || `${response.status} ${response.statusText}`);
  return payload;
}

// A text, "(empty)" when it has none.
function filled(text) { return text && text.trim() ? text : el("span", {class: "muted"}, "(empty)"); }

// A passage's text with the answers marked, cut at CUT characters with a "show all" button.
function passage(text, answers) {
  if (text.length <= CUT) return el("span", {}, highlighted(text, answers));
  const node = el("span", {}, highlighted(text.slice(0, CUT), answers), "… ");
  node.append(el("button", {class: "all", onclick: () => node.replaceChildren(
    ...highlighted(text, answers))}, `show all (${text.length.toLocaleString("en")} characters)`));
  return node;
}

function tag(text, kind) { return el("span", {class: `tag ${kind}`}, text); }
function rightWrong(correct) { return correct ? tag("right", "right") : tag("wrong", "wrong"); }
function number(x) {
  return typeof x === "number" ? (Number.isInteger(x) ? x.toLocaleString("en") : x.toFixed(3)) : x;
}

// The passage text with every gold answer's occurrences marked (case-insensitive).
function highlighted(text, answers) {
  const wanted = answers.filter(a => a.trim()).map(a => a.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  if (!wanted.length) return [text];
  const parts = text.split(new RegExp(`(${wanted.join("|")})`, "gi"));
  return parts.map((part, i) => (i % 2 ? el("mark", {}, part) : part));
}

// The versions' scalar statistics side by side, then each statistic that is a list of rows
// (a compare version's transfer and overlap tables) as its own table.
function statsTables(versions) {
  const scalar = v => v === null || typeof v !== "object";
  const keys = [...new Set(versions.flatMap(v => Object.keys(v.stats)
    .filter(k => scalar(v.stats[k]))))];
  const cell = x => el("td", {class: "num"}, x === null || x === undefined ? "n/a" : number(x));
  const tables = [el("table", {id: "stats"},
    el("tr", {}, el("th", {}, ""), versions.map(v => el("th", {}, `${v.llm} v${v.version}`))),
    keys.map(k => el("tr", {}, el("th", {}, k), versions.map(v => cell(v.stats[k])))))];
  for (const v of versions) {
    for (const [name, rows] of Object.entries(v.stats)) {
      if (!Array.isArray(rows) || !rows.length || scalar(rows[0])) continue;
      const columns = Object.keys(rows[0]);
      tables.push(el("h2", {}, `${name} (${v.llm} v${v.version})`), el("table", {},
        el("tr", {}, columns.map(c => el("th", {}, c))),
        rows.map(row => el("tr", {}, columns.map(c => cell(row[c]))))));
    }
  }
  return tables;
}

// Links to the submissions scored against view `index` (every view's when undefined).
function submissionLinks(index) {
  const scored = submissions.map((s, i) => [s, i]).filter(([s]) => index === undefined || s.view === index);
  if (!scored.length) return [];
  return [el("h2", {}, "Submissions scored"), el("table", {id: "submissions"},
    el("tr", {}, ["submission", "kind", "against", "queries"].map(h => el("th", {}, h))),
    scored.map(([s, i]) => el("tr", {}, el("td", {}, el("a", {href: `#/s/${i}`}, s.submission)),
      el("td", {}, s.kind), el("td", {}, `${views[s.view].kind} · ${views[s.view].dataset}: ${s.reference}`),
      el("td", {class: "num"}, number(s.counts.queries)))))];
}

// A submission's summary, then a row per scored query: its metrics beside the reference's
// gold, sorted by the column clicked (again: the other way), each qid linking to its page.
async function showSubmission(index, params) {
  const s = submissions[index];
  const sort = params.get("sort") || "";
  const desc = params.get("desc") === "1";
  const page = Number(params.get("page") || 0);
  const query = new URLSearchParams({sort, desc: desc ? 1 : 0, offset: page * PAGE, limit: PAGE});
  const list = await api(`/api/submissions/${index}?${query}`);
  const go = changes => {
    location.hash = `#/s/${index}?${new URLSearchParams({sort, desc: desc ? 1 : 0, page, ...changes})}`;
  };
  const columns = ["qid", "question", "gold", "submitted", ...s.metrics];
  const head = c => {
    if (c === "gold") return el("th", {}, "reference gold");
    if (c === "submitted") return el("th", {}, s.kind === "ranking" ? "ranked first" : s.kind === "selection" ? "selected" : "evidence");
    const arrow = c === sort ? (desc ? " ▼" : " ▲") : "";
    return el("th", {class: "sortable", "data-sort": c,
      onclick: () => go({sort: c, desc: c === sort && !desc ? 1 : 0, page: 0})}, c + arrow);
  };
  const cell = (row, c) => {
    if (c === "qid") {
      return el("td", {}, el("a", {href: `#/v/${s.view}/q/${encodeURIComponent(row.qid)}`}, row.qid),
        row.missing ? [" ", tag("missing", "wrong")] : "");
    }
    if (c === "question") return el("td", {}, row.question ?? "");
    const pids = (list, gold) => list.length ? list.map((pid, n) => [n ? ", " : "",
      gold.includes(pid) ? tag(pid, "useful pid") : el("span", {class: "pid"}, pid)]) : "none";
    if (c === "gold") return el("td", {class: "muted"}, row.gold ? pids(row.gold, []) : "n/a");
    if (c === "submitted") {
      const given = row.submitted;
      if (given === null) return el("td", {class: "muted"}, "not in the submission");
      if (!Array.isArray(given)) return el("td", {class: "passage"}, given);
      return el("td", {}, pids(given, row.gold || []));
    }
    return el("td", {class: "num"}, row[c] === null ? "n/a" : number(row[c]));
  };
  show(
    el("h1", {}, `${s.kind} ${s.submission}`),
    el("p", {}, `scored against ${views[s.view].kind} · ${views[s.view].dataset}: ${s.reference}`,
      el("span", {class: "muted"}, " as labeler score does; click a column to sort")),
    el("table", {id: "summary"}, el("tr", {}, Object.keys(s.summary).map(k => el("th", {}, k))),
      el("tr", {}, Object.values(s.summary).map(v => el("td", {class: "num"}, v === null ? "n/a" : number(v))))),
    el("table", {id: "scores"}, el("tr", {}, columns.map(head)),
      list.rows.map(row => el("tr", {"data-qid": row.qid}, columns.map(c => cell(row, c))))),
    el("div", {class: "bar"},
      el("button", {onclick: () => go({page: page - 1}), disabled: page === 0 || null}, "‹ prev"),
      `page ${page + 1} of ${Math.max(1, Math.ceil(list.total / PAGE))}`,
      el("button", {onclick: () => go({page: page + 1}),
        disabled: (page + 1) * PAGE >= list.total || null}, "next ›")));
}

async function showViews() {
  show(el("h1", {}, "Versions being viewed"),
    views.map((view, i) => el("section", {},
      el("h2", {}, el("a", {href: `#/v/${i}`}, `${view.kind} · ${view.dataset}`)),
      el("table", {}, el("tr", {}, el("th", {}, "llm"), el("th", {}, "version"),
        el("th", {}, "folder")),
        view.versions.map(v => el("tr", {}, el("td", {}, v.llm), el("td", {}, `v${v.version}`),
          el("td", {class: "muted"}, v.folder)))))), submissionLinks());
}

async function showList(index, params) {
  const view = views[index];
  const filter = params.get("filter") || "all";
  const search = params.get("q") || "";
  const page = Number(params.get("page") || 0);
  const query = new URLSearchParams({filter, q: search, offset: page * PAGE, limit: PAGE});
  const list = await api(`/api/views/${index}/queries?${query}`);
  const go = changes => {
    const next = new URLSearchParams({filter, q: search, page: 0, ...changes});
    location.hash = `#/v/${index}?${next}`;
  };
  const searchBox = el("input", {type: "search", placeholder: "search questions  ( / )",
    value: search, id: "search"});
  searchBox.onchange = () => go({q: searchBox.value});
  const flags = Object.keys(view.filters).filter(f => !["all", "unreviewed"].includes(f));
  const flagCells = row => flags.filter(f => f in row)
    .map(f => el("td", {}, row[f] ? tag(f, f === "disagree" ? "wrong" : "gold") : ""));
  const listed = new URLSearchParams({filter, q: search});
  show(
    el("h1", {}, `${view.kind} · ${view.dataset}: `,
      view.versions.map(v => `${v.llm} v${v.version}`).join(", ")),
    el("div", {class: "bar"}, Object.entries(view.filters).map(([name, help]) =>
      el("button", {class: name === filter ? "on" : null, title: help, "data-filter": name,
        onclick: () => go({filter: name})}, name === "unreviewed" ? "not yet reviewed by me" : name)),
      searchBox,
      el("span", {class: "muted", id: "total"}, `${list.total.toLocaleString("en")} queries`),
      "unreviewed" in view.filters ? progress(list) : ""),
    el("table", {id: "queries"}, el("tr", {}, el("th", {}, "qid"), el("th", {}, "question"),
      flags.map(f => el("th", {}, f))),
      list.rows.map(row => el("tr", {"data-key": row.key}, el("td", {}, el("a", {
        href: `#/v/${index}/q/${encodeURIComponent(row.key)}?${listed}`}, row.key)),
        el("td", {}, row.question), flagCells(row)))),
    el("div", {class: "bar"},
      el("button", {onclick: () => go({page: page - 1}), disabled: page === 0 || null}, "‹ prev"),
      `page ${page + 1} of ${Math.max(1, Math.ceil(list.total / PAGE))}`,
      el("button", {onclick: () => go({page: page + 1}),
        disabled: (page + 1) * PAGE >= list.total || null}, "next ›")),
    shortcuts(), submissionLinks(index), el("h2", {}, "Statistics"), statsTables(view.versions));
  here = {list: [index, params]};
}

function utilityPage(index, page) {
  const view = views[index];
  const present = page.records.map((r, i) => [r, i]).filter(([r]) => r);
  const first = present[0][0];
  const verdicts = page.verdicts.map((_, i) => keptVerdicts(page, i));
  const candidates = new Map();
  for (const [record] of present) {
    for (const c of record.candidates) if (!candidates.has(c.pid)) candidates.set(c.pid, c);
  }
  const llmHead = present.map(([, i]) => el("th", {}, view.versions[i].llm));
  return [
    el("h1", {id: "question"}, first.question),
    el("p", {}, "Gold answers: ", first.answers.map(a => tag(a, "gold")), " ",
      el("span", {class: "muted"}, `qid ${page.key} · pool ${first.pool}`)),
    el("h2", {}, "Closed-book"),
    el("table", {}, el("tr", {}, el("th", {}, "llm"), el("th", {}, "answer"),
      el("th", {}, "known"), el("th", {}, "gold utilitarian"), el("th", {}, "verdict on the query")),
      present.map(([r, i]) => el("tr", {}, el("td", {}, r.llm),
        el("td", {class: "answer"}, filled(r.closed_book_answer)), el("td", {}, rightWrong(r.known)),
        el("td", {}, r.utility_pids.length ? r.utility_pids.join(", ") : "none"),
        el("td", {}, verdictBox(index, i, page.key, "query", null, verdicts[i]("query")[""]))))),
    el("h2", {}, "Candidates"),
    el("table", {id: "candidates"}, el("tr", {}, el("th", {}, "passage"), el("th", {}, "source"),
      llmHead),
      [...candidates.values()].map(c => el("tr", {"data-pid": c.pid},
        el("td", {class: "passage"}, el("b", {}, c.title), " ", passage(c.text, first.answers)),
        el("td", {}, c.rank ? `rank ${c.rank}` : "not retrieved", el("br"),
          c.gold ? tag("human gold", "gold") : "", el("div", {class: "muted"}, c.pid)),
        present.map(([r, i]) => {
          const mine = r.candidates.find(x => x.pid === c.pid);
          if (!mine) return el("td", {class: "muted"}, "not in this pool");
          return el("td", {}, el("div", {class: "answer"}, filled(mine.answer)),
            rightWrong(mine.correct), " ", mine.utility ? tag("utilitarian", "useful") : "",
            verdictBox(index, i, page.key, "candidate", c.pid, verdicts[i]("candidate")[c.pid]));
        })))),
  ];
}

function versionName(index, i) {
  const v = views[index].versions[i];
  return `${v.llm} v${v.version}`;
}

// SEER: a query's passages and full answer, its extractions with the three experts' scores,
// weighted score, rank and a verdict each, and its preference pairs with their λ weights.
function seerPage(index, page) {
  const score = x => el("td", {class: "num"}, number(x));
  return page.records.map((r, i) => {
    if (!r) return null;
    const kept = keptVerdicts(page, i);
    return [
      el("h1", {}, r.question),
      el("p", {}, "Gold answers: ", r.answers.map(a => tag(a, "gold")), " ",
        el("span", {class: "muted"}, `qid ${page.key}`)),
      el("h2", {}, `${versionName(index, i)}: passages`),
      el("table", {class: "passages"}, el("tr", {}, ["rank", "passage"].map(h => el("th", {}, h))),
        r.candidates.map(c => el("tr", {}, score(c.rank), el("td", {class: "passage"},
          el("b", {}, c.title), " ", passage(c.text, r.answers), el("div", {class: "muted"}, c.pid))))),
      el("p", {}, "Full answer (with all passages): ", el("span", {class: "answer"}, filled(r.full_answer)),
        " ", verdictBox(index, i, page.key, "query", null, kept("query")[""])),
      el("h2", {}, `${versionName(index, i)}: extractions`),
      el("table", {class: "extractions"}, el("tr", {}, ["rank", "sample", "tokens", "faithfulness",
        "helpfulness", "conciseness", "weighted", "evidence", "verdict"].map(h => el("th", {}, h))),
        r.extractions.map(e => el("tr", {"data-sample": e.sample}, score(e.rank), score(e.sample),
          score(e.tokens), score(e.scores.faithfulness), score(e.scores.helpfulness),
          score(e.scores.conciseness), score(e.scores.weighted),
          el("td", {class: "passage"}, e.text.trim() ? passage(e.text, r.answers) : filled("")),
          el("td", {}, verdictBox(index, i, page.key, "extraction", String(e.sample),
            kept("extraction")[String(e.sample)]))))),
      el("h2", {}, `${versionName(index, i)}: preference pairs`),
      el("table", {class: "pairs"}, el("tr", {}, ["chosen rank", "rejected rank", "λ",
        "chosen weighted", "rejected weighted"].map(h => el("th", {}, h))),
        (page.tables[i].pairs || []).map(p => el("tr", {}, score(p.chosen_rank),
          score(p.rejected_rank), score(p.lambda_weight), score(p.chosen_scores.weighted),
          score(p.rejected_scores.weighted))))];
  });
}

// Rubric: a query's questions x candidates as a P(yes) heatmap, beside each candidate's text
// (from the source's corpus), BM25 and fused ranks, its qrels grade and a verdict on it.
function rubricPage(index, page) {
  return page.records.map((r, i) => {
    if (!r) return null;
    const kept = keptVerdicts(page, i);
    const {texts, error} = page.texts[i];
    const text = pid => texts[pid] ? [el("b", {}, texts[pid].title), " ", passage(texts[pid].text, [])]
      : el("span", {class: "muted"}, error ? "(text not at hand)" : "(not in the corpus)");
    const candidates = [...(page.tables[i].candidates || [])].sort((a, b) => a.rank - b.rank);
    const heat = p => el("td", {class: "cell", title: number(p),
      style: `background: hsl(140, 60%, ${96 - 50 * p}%)`}, p.toFixed(2));
    return [
      el("h1", {}, r.query),
      el("h2", {}, `${versionName(index, i)}: questions`),
      el("ol", {}, r.questions.map(q => el("li", {}, q.text))),
      verdictBox(index, i, page.key, "query", null, kept("query")[""]),
      error ? el("p", {class: "wrong"}, error) : "",
      el("table", {class: "heat"}, el("tr", {}, ["pid", "document", "BM25 rank", "fused rank", "grade"]
        .map(h => el("th", {}, h)), r.questions.map((q, n) => el("th", {title: q.text}, `Q${n + 1}`)),
        el("th", {}, "verdict")),
        candidates.map(c => el("tr", {"data-pid": c.pid}, el("td", {}, c.pid),
          el("td", {class: "passage"}, text(c.pid)),
          el("td", {class: "num"}, c.bm25_rank), el("td", {class: "num"}, c.rank),
          el("td", {class: "num"}, c.label ?? "n/a"), c.p_yes.map(heat),
          el("td", {}, verdictBox(index, i, page.key, "candidate", c.pid, kept("candidate")[c.pid])))))];
  });
}

// Any other kind: each version's records of the query (a review's several) as JSON.
function recordPage(index, page) {
  return [el("h1", {}, page.key), page.records.map((r, i) => [
    el("h2", {}, `${views[index].versions[i].llm} v${views[index].versions[i].version}`),
    r ? (page.repeated[i] ?? [r]).map(one => el("pre", {}, JSON.stringify(one, null, 2)))
      : el("p", {class: "muted"}, "not here")])];
}

// A query's page: "all queries", previous / next in the list it was opened from, progress.
async function showQuery(index, key, params) {
  const listed = new URLSearchParams({filter: params.get("filter") || "all", q: params.get("q") || ""});
  const [page, around] = await Promise.all([
    api(`/api/views/${index}/query/${encodeURIComponent(key)}`),
    api(`/api/views/${index}/neighbours/${encodeURIComponent(key)}?${listed}`)]);
  const pages = {utility: utilityPage, seer: seerPage, rubric: rubricPage};
  const body = (pages[views[index].kind] || recordPage)(index, page);
  const link = (to, text, id) => to === null ? el("span", {class: "muted"}, text)
    : el("a", {id, href: `#/v/${index}/q/${encodeURIComponent(to)}?${listed}`}, text);
  show(el("div", {class: "bar"}, el("a", {href: `#/v/${index}?${listed}`}, "‹ all queries"),
    link(around.previous, "‹ previous (p)", "previous"), link(around.next, "next (n) ›", "next"),
    "unreviewed" in views[index].filters ? progress(around) : ""), ...body, shortcuts());
  here = {query: [index, key, params], around, listed};
  select(0);
}

async function route() {
  here = {};
  const [path, search] = location.hash.slice(1).split("?");
  const parts = path.split("/").filter(Boolean);
  const params = new URLSearchParams(search);
  try {
    views = views || await api("/api/views");
    submissions = submissions || await api("/api/submissions");
    if (parts[0] === "v" && parts[2] === "q") await showQuery(Number(parts[1]), decodeURIComponent(parts[3]), params);
    else if (parts[0] === "v") await showList(Number(parts[1]), params);
    else if (parts[0] === "s") await showSubmission(Number(parts[1]), params);
    else if (views.length === 1 && !submissions.length) await showList(0, params);
    else await showViews();
  } catch (error) {
    show(el("p", {class: "wrong", id: "error"}, `error: ${error.message}`));
  }
}

window.addEventListener("hashchange", route);
route();
