// labeler view: the verdicts on a query's page. A box per thing judged (verdictBox), saved
// at once; one the server did not take stays in this tab (sessionStorage) for "retry"; the
// keys (onKey) move between queries and boxes and give verdicts. Loaded before app.js, whose
// globals (el, api, main, here) it uses when called.
"use strict";

// How many of the view's queries the reviewer has given a verdict.
function progress(counts) {
  return el("span", {id: "progress"}, `reviewed by me: ${counts.judged} of ${counts.queries}`);
}

// The query page's progress, again after a verdict was saved.
async function refreshProgress() {
  const node = document.getElementById("progress");
  if (!node || !here.query) return;
  const [index, key] = here.query;
  const around = await api(`/api/views/${index}/neighbours/${encodeURIComponent(key)}?${here.listed}`)
    .catch(() => null);
  if (around) node.replaceWith(progress(around));
}

function shortcuts() {
  return el("p", {class: "muted keys"}, "Keys: n / p next / previous query · j / k next / ",
    "previous verdict box · a agree · d disagree · u unsure · e note (Enter saves) · / search");
}

// Verdicts not yet taken by the server, kept in this tab: key -> {verdict, note}.
const drafts = {
  key: (...parts) => JSON.stringify(parts),
  get(key) { return JSON.parse(sessionStorage.getItem(key) || "null"); },
  set(key, value) { sessionStorage.setItem(key, JSON.stringify(value)); },
  drop(key) { sessionStorage.removeItem(key); },
};

// The agree / disagree / unsure buttons and note on one thing a version says about a query
// (`about`: query, candidate or extraction; `pid` which one). A choice is saved at once, the
// note with it; a note typed before a verdict is kept until one is chosen; a failed save
// says "not saved" and keeps the verdict for "retry".
function verdictBox(index, version, qid, about, pid, kept) {
  const box = el("div", {class: "verdict", "data-about": about, "data-pid": pid ?? "",
    "data-version": version});
  const key = drafts.key(index, version, qid, about, pid);
  const draft = drafts.get(key);
  const status = el("span", {class: "saved"}, kept && !draft ? "saved" : "");
  const note = el("input", {type: "text", placeholder: "note", maxlength: 4096,
    value: draft?.note ?? kept?.note ?? ""});
  let chosen = draft?.verdict ?? kept?.verdict ?? null;
  const retry = el("button", {class: "retry", hidden: true, onclick: () => save()}, "retry");
  const say = (text, kind) => { status.textContent = text; status.className = kind; };
  const save = async () => {
    drafts.set(key, {verdict: chosen, note: note.value});
    if (!chosen) return say("note kept: choose a verdict to save it", "pending");
    say("saving…", "pending");
    try {
      await api(`/api/views/${index}/verdict`,
        {version, qid, about, pid, verdict: chosen, note: note.value});
    } catch (error) {
      retry.hidden = false;
      return say(`not saved: ${error.message}`, "unsaved");
    }
    drafts.drop(key);
    retry.hidden = true;
    say("saved", "saved");
    refreshProgress();
  };
  const buttons = ["agree", "disagree", "unsure"].map(v => el("button", {
    "data-verdict": v, class: v === chosen ? "on" : null, onclick: () => box.choose(v)}, v));
  box.choose = verdict => {
    chosen = verdict;
    for (const b of buttons) b.classList.toggle("on", b.dataset.verdict === verdict);
    return save();
  };
  box.note = note;
  note.onchange = () => save();
  note.onkeydown = event => { if (event.key === "Enter") note.blur(); };
  box.append(...buttons, el("br"), note, " ", status, " ", retry);
  if (draft) {
    retry.hidden = !draft.verdict;
    say(draft.verdict ? "not saved" : "note kept: choose a verdict to save it",
      draft.verdict ? "unsaved" : "pending");
  }
  return box;
}

// The verdicts kept on query `page` in version `i`: about -> pid ("" for none) -> verdict.
function keptVerdicts(page, i) {
  const kept = {};
  for (const v of page.verdicts[i]) (kept[v.about] ??= {})[v.pid ?? ""] = v;
  return about => kept[about] || {};
}

// The verdict box keyboard keys act on: the n-th on the page, outlined.
let selected = 0;
function select(n) {
  const boxes = [...main.querySelectorAll(".verdict")];
  if (!boxes.length) return null;
  selected = Math.max(0, Math.min(n, boxes.length - 1));
  boxes.forEach((b, i) => b.classList.toggle("selected", i === selected));
  boxes[selected].scrollIntoView({block: "nearest"});
  return boxes[selected];
}

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target.matches("input")) {
    if (event.key === "Escape") event.target.blur();
    return;
  }
  const go = to => { if (to !== null) location.hash = `#/v/${here.query[0]}/q/${encodeURIComponent(to)}?${here.listed}`; };
  const box = here.query ? select(selected) : null;
  const verdicts = {a: "agree", d: "disagree", u: "unsure"};
  if (event.key === "/") document.getElementById("search")?.focus();
  else if (here.list && event.key === "n") main.querySelector("#queries a")?.click();
  else if (!here.query) return;
  else if (event.key === "n") go(here.around.next);
  else if (event.key === "p") go(here.around.previous);
  else if (event.key === "j") select(selected + 1);
  else if (event.key === "k") select(selected - 1);
  else if (box && verdicts[event.key]) box.choose(verdicts[event.key]);
  else if (box && event.key === "e") box.note.focus();
  else return;
  event.preventDefault();
}

document.addEventListener("keydown", onKey);
