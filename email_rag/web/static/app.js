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
  // Ctrl/Cmd+Enter in the reply approves it.
  var body = document.getElementById("body");
  var approveForm = document.getElementById("approve-form");
  if (body && approveForm) {
    body.addEventListener("keydown", function (ev) {
      if ((ev.ctrlKey || ev.metaKey) && ev.key === "Enter") {
        ev.preventDefault();
        approveForm.requestSubmit();
      }
    });
  }
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
