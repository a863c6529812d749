// email-rag web UI: small conveniences only; every action works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // A submitted form's buttons are disabled, so a double click sends one request
  // (the server would give one approval and one send anyway).
  document.querySelectorAll("form[method=post]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      if (form.dataset.sent === "1") { ev.preventDefault(); return; }
      form.dataset.sent = "1";
      setTimeout(function () {
        form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
      }, 0);
    });
  });
  // Coming back with the browser's back button: forms are usable again.
  window.addEventListener("pageshow", function (ev) {
    if (!ev.persisted) { return; }
    document.querySelectorAll("form[method=post]").forEach(function (form) {
      form.dataset.sent = "";
      form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
    });
  });
  var body = document.getElementById("body");
  var approveForm = document.getElementById("approve-form");
  if (body && approveForm) { reviewDesk(body, approveForm); }
  bindNavigationKeys();
  var every = parseFloat(document.body.dataset.refresh || "0");
  if (every > 0) { refreshLive(every * 1000); }
  // "select all" for bulk retry.
  document.querySelectorAll("[data-select-all]").forEach(function (box) {
    box.addEventListener("change", function () {
      var name = box.getAttribute("data-select-all");
      document.querySelectorAll('input[type=checkbox][name="' + name + '"]').forEach(function (c) {
        c.checked = box.checked;
      });
    });
  });
});

// The draft page: text saved on the server as the agent types, a warning before leaving
// with text not saved yet, "being edited by X", approve only after a confirm step,
// and Regenerate asks before throwing edits away.
function reviewDesk(body, approveForm) {
  var state = document.getElementById("save-state");
  var original = document.getElementById("original-body");
  var originalText = original ? original.value : body.value;
  var saved = body.value;
  var submitting = false;
  var timer = null;
  var inflight = false;

  // the page's texts in the user's language (data-msg-* of the approve form)
  function msg(key, values) {
    var text = approveForm.dataset["msg" + key] || "";
    Object.keys(values || {}).forEach(function (k) { text = text.split("{" + k + "}").join(values[k]); });
    return text;
  }
  function say(text) { if (state) { state.textContent = text; } }
  function show(id, text) {
    var el = document.getElementById(id);
    if (!el) { return; }
    el.textContent = text;
    el.hidden = !text;
  }
  function save() {
    timer = null;
    if (inflight || body.value === saved) { return; }
    inflight = true;
    var text = body.value;
    var data = new FormData();
    data.append("csrf_token", approveForm.querySelector("input[name=csrf_token]").value);
    data.append("body", text);
    fetch(approveForm.dataset.autosave, {method: "POST", body: data, credentials: "same-origin"})
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(function (answer) {
        if (answer.saved === false) { say(answer.error); return; }
        saved = text;
        say(msg("Saved"));
        show("live-editing", answer.editing && answer.editing.length ?
          msg("Editing", {names: answer.editing.join(", ")}) : "");
        show("live-changed", answer.changed ?
          msg("Changed", {what: answer.changed}) : "");
      })
      .catch(function () { say(msg("Offline")); })
      .then(function () { inflight = false; if (body.value !== saved) { schedule(); } });
  }
  function schedule() {
    if (timer) { clearTimeout(timer); }
    timer = setTimeout(save, 800);
  }
  body.addEventListener("input", function () { say(msg("Saving")); schedule(); });
  body.addEventListener("blur", save);

  window.addEventListener("beforeunload", function (ev) {
    if (!submitting && body.value !== saved) {
      ev.preventDefault();
      ev.returnValue = "";
    }
  });
  document.querySelectorAll("form[method=post]").forEach(function (f) {
    f.addEventListener("submit", function () { submitting = true; });
  });

  // saved replies and the signature: inserted where the cursor is (at the end when the
  // editor was not used yet), already filled in by the server; autosaved like typing
  var touched = false;
  body.addEventListener("focus", function () { touched = true; });
  document.querySelectorAll("button[data-insert]").forEach(function (button) {
    button.addEventListener("click", function (ev) {
      var source = document.getElementById(button.dataset.insert);
      if (!source) { return; }
      ev.preventDefault();
      var atEnd = !touched || button.dataset.at === "end";  // the signature: at the end
      var start = atEnd ? body.value.replace(/\s+$/, "").length : body.selectionStart;
      var end = atEnd ? body.value.length : body.selectionEnd;
      var before = body.value.slice(0, start);
      var after = body.value.slice(end);
      var sep = !before || /\n\n$/.test(before) ? "" : (/\n$/.test(before) ? "\n" : "\n\n");
      var text = sep + source.value;
      body.value = before + text + (!after || /^\n/.test(after) ? after : "\n\n" + after);
      body.focus();
      body.selectionStart = body.selectionEnd = start + text.length;
      body.dispatchEvent(new Event("input"));
    });
  });

  var revert = document.getElementById("revert");
  if (revert) {
    revert.addEventListener("click", function () { body.value = originalText; schedule(); });
  }

  var regen = document.getElementById("regenerate");
  if (regen) {
    regen.addEventListener("click", function (ev) {  // also fired by Enter in the note field
      if (body.value !== originalText &&
          !window.confirm(msg("Regenerate"))) {
        ev.preventDefault();
      }
    });
  }

  // approve: Ctrl/Cmd+Enter (in the editor) or "a" asks first; Enter confirms, Esc cancels
  var confirmBox = document.getElementById("confirm-approve");
  var yes = document.getElementById("confirm-yes");
  var no = document.getElementById("confirm-no");
  function askApprove() {
    if (!confirmBox) { approveForm.requestSubmit(); return; }
    confirmBox.hidden = false;
    yes.focus();
  }
  function cancelApprove() { confirmBox.hidden = true; body.focus(); }
  if (yes) { yes.addEventListener("click", function () { approveForm.requestSubmit(); }); }
  if (no) { no.addEventListener("click", cancelApprove); }
  if (confirmBox) {
    confirmBox.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape") { ev.preventDefault(); cancelApprove(); }
    });
  }
  body.addEventListener("keydown", function (ev) {
    if ((ev.ctrlKey || ev.metaKey) && ev.key === "Enter") { ev.preventDefault(); askApprove(); }
    if (ev.key === "Escape") { body.blur(); }
  });
  document.addEventListener("keydown", function (ev) {
    if (typing(ev) || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    if (ev.key === "a") { ev.preventDefault(); askApprove(); }
    if (ev.key === "e") { ev.preventDefault(); body.focus(); }
    if (ev.key === "r") {
      var reason = document.getElementById("reason");
      if (reason) { ev.preventDefault(); reason.focus(); }
    }
  });
}

function typing(ev) {
  var t = ev.target;
  return t && (t.tagName === "TEXTAREA" || t.tagName === "INPUT" || t.tagName === "SELECT" ||
               t.isContentEditable);
}

// j / k: next / previous draft, g: the queue, "/": the queue's search field.
function bindNavigationKeys() {
  document.addEventListener("keydown", function (ev) {
    if (typing(ev) || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var target = null;
    if (ev.key === "j") { target = document.getElementById("skip"); }
    if (ev.key === "k") { target = document.getElementById("prev"); }
    if (ev.key === "g") { target = document.querySelector("a.back"); }
    if (target && target.href) { ev.preventDefault(); window.location.href = target.href; }
    if (ev.key === "/") {
      var search = document.getElementById("search");
      if (search) { ev.preventDefault(); search.focus(); }
    }
  });
}

// The queue and the draft page fetch themselves every few seconds while shown, and put the
// new content of each [data-live] part (lists, counts, position, who else has it open) in
// place of the old one. Nothing else is touched: the editor, its cursor and every form
// keep what the agent typed. A part holding the focus, or drafts ticked for a bulk action,
// waits for the next round.
function refreshLive(ms) {
  var busy = false;
  function round() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch(window.location.href, {credentials: "same-origin", headers: {"X-Refresh": "1"}})
      .then(function (r) {
        if (!r.ok || r.redirected) { throw new Error("HTTP " + r.status); }
        return r.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (part) {
          var next = fresh.querySelector('[data-live="' + part.dataset.live + '"]');
          if (!next || next.innerHTML === part.innerHTML) { return; }
          if (part.contains(document.activeElement)) { return; }
          // drafts ticked for a bulk action stay ticked: the part waits until none is
          if (part.querySelector("input[type=checkbox]:checked")) { return; }
          part.innerHTML = next.innerHTML;
        });
      })
      .catch(function () { /* offline or logged out: the next round tries again */ })
      .then(function () { busy = false; });
  }
  setInterval(round, ms);
}
