import FerryCore
import Foundation

/// The status page's HTML: one document with its style and script inline (nothing is fetched from
/// elsewhere). The tasks as they are when the page is asked for are embedded as JSON and drawn by the
/// script as the document loads; after that, server-sent events redraw them every second. Every value
/// from a task (URLs, descriptions, errors) goes into the page as text, never as markup.
enum StatusPageHTML {
    /// JSON text that can stand inside a `<script>` element whatever its strings hold: `<`, `>`, `&`
    /// and the line separators U+2028 and U+2029 as `\uXXXX` escapes (they occur in JSON only inside
    /// strings, where the escape means the same character).
    static func scriptSafe(_ json: String) -> String {
        var result = ""
        result.reserveCapacity(json.utf8.count)
        for scalar in json.unicodeScalars {
            switch scalar {
            case "<": result += "\\u003c"
            case ">": result += "\\u003e"
            case "&": result += "\\u0026"
            case "\u{2028}": result += "\\u2028"
            case "\u{2029}": result += "\\u2029"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    static func render(_ snapshot: StatusPageRoutes.Snapshot) -> String {
        let json = (try? JSONEncoder().encode(snapshot)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        // Inside <script>, "</script" ends the element and "<!--" starts a comment state that swallows it
        // (a task's Set-Cookie value was enough to make the page draw nothing): every <, > and & is
        // written as a JSON escape, which means the same string to the script.
        let embedded = Self.scriptSafe(json)
        return template.replacingOccurrences(of: "__SNAPSHOT__", with: embedded)
            .replacingOccurrences(of: "__VERSION__", with: FerryVersion.current)
    }

    private static let template = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Ferry — transfers</title>
        <style>
        :root { font-family: system-ui, sans-serif; color: #1d2330; background: #f6f7f9; }
        body { margin: 1.5rem 2rem; }
        h1 { font-size: 1.3rem; margin: 0 0 .2rem; }
        .sub { color: #667; font-size: .85rem; margin-bottom: 1rem; }
        table { border-collapse: collapse; width: 100%; background: #fff; box-shadow: 0 1px 3px #0002; }
        th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid #e4e6ea; font-size: .9rem; vertical-align: middle; }
        th { background: #eef0f4; font-weight: 600; }
        td { white-space: nowrap; }
        td.error { white-space: normal; min-width: 14rem; }
        td.target { max-width: 28rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
        .bar { width: 10rem; height: .7rem; background: #e4e6ea; border-radius: .35rem; overflow: hidden; display: inline-block; vertical-align: middle; }
        .bar > span { display: block; height: 100%; background: #3b82f6; }
        .state { font-weight: 600; }
        .state.running { color: #1d6fd8; } .state.failed { color: #c62828; } .state.done { color: #2e7d32; }
        .state.suspended { color: #8a6d00; } .state.retrying { color: #8a6d00; } .state.waiting { color: #8a6d00; }
        .error { color: #c62828; font-size: .85rem; }
        button { font: inherit; font-size: .8rem; margin-right: .25rem; padding: .15rem .5rem; border: 1px solid #b8bdc7; border-radius: .3rem; background: #fff; cursor: pointer; }
        button:hover { background: #eef0f4; }
        #backlog { margin-top: 1.2rem; font-size: .9rem; }
        #empty { padding: 1rem; color: #667; }
        </style>
        </head>
        <body>
        <h1>Ferry — background transfers</h1>
        <div class="sub">ferryd __VERSION__ · <span id="updated">as loaded</span></div>
        <table>
        <thead><tr><th>Session</th><th>ID</th><th>State</th><th>Progress</th><th>Rate</th><th>Target</th><th>Error</th><th></th></tr></thead>
        <tbody id="tasks"></tbody>
        </table>
        <div id="empty" hidden>No background tasks.</div>
        <div id="backlog"></div>
        <script>
        "use strict";
        const token = new URLSearchParams(location.search).get("token") || "";
        const initial = __SNAPSHOT__;
        function bytes(n) {
          const units = ["B", "KiB", "MiB", "GiB", "TiB"];
          let i = 0; while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
          return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
        }
        function stateOf(t) {
          if (t.state === "completed") {
            const ok = !t.error && (t.statusCode === undefined || t.statusCode < 400);
            return ok ? "done" : "failed";
          }
          if (t.state === "pending" && t.waitingReason) return "waiting";
          if (t.state === "pending" && t.lastError) return "retrying";
          return t.state;
        }
        function cell(row, text, cls) {
          const td = document.createElement("td");
          if (cls) td.className = cls;
          if (text instanceof Node) td.appendChild(text); else td.textContent = text;
          row.appendChild(td);
          return td;
        }
        function button(t, action, label) {
          const b = document.createElement("button");
          b.textContent = label;
          b.dataset.action = action; b.dataset.session = t.session; b.dataset.task = String(t.taskIdentifier);
          b.addEventListener("click", () => act(t.session, t.taskIdentifier, action));
          return b;
        }
        function render(snapshot) {
          const body = document.getElementById("tasks");
          body.replaceChildren();
          for (const t of snapshot.tasks) {
            const row = document.createElement("tr");
            row.dataset.session = t.session; row.dataset.task = String(t.taskIdentifier);
            const state = stateOf(t);
            row.dataset.state = state;
            cell(row, t.session);
            cell(row, String(t.taskIdentifier));
            cell(row, state, "state " + state);
            const done = t.kind === "upload" ? t.bytesSent : t.bytesReceived;
            const progress = document.createElement("span");
            if (t.expectedLength > 0) {
              const bar = document.createElement("span"); bar.className = "bar";
              const fill = document.createElement("span");
              fill.style.width = Math.min(100, 100 * done / t.expectedLength).toFixed(1) + "%";
              bar.appendChild(fill); progress.appendChild(bar);
              progress.appendChild(document.createTextNode(" " + bytes(done) + " / " + bytes(t.expectedLength)));
            } else {
              progress.textContent = bytes(done);
            }
            cell(row, progress);
            cell(row, t.bytesPerSecond ? bytes(t.bytesPerSecond) + "/s" : "–");
            const target = t.destination || t.taskDescription || t.originalRequest.url;
            cell(row, target, "target").title = t.originalRequest.url;
            let error = t.error ? t.error.message : "";
            if (!error && t.waitingReason) {
              error = "waits: " + t.waitingReason;
            }
            if (!error && t.lastError) {
              error = t.lastError.message;
              if (t.nextAttemptTime) error += " (next try at " + new Date(t.nextAttemptTime * 1000).toLocaleTimeString() + ")";
            }
            cell(row, error, "error");
            const actions = document.createElement("span");
            actions.style.whiteSpace = "nowrap";
            if (t.state === "running" || t.state === "pending") actions.appendChild(button(t, "pause", "Pause"));
            if (t.state === "suspended") actions.appendChild(button(t, "resume", "Resume"));
            if (t.state !== "completed") actions.appendChild(button(t, "cancel", "Cancel"));
            cell(row, actions);
            body.appendChild(row);
          }
          document.getElementById("empty").hidden = snapshot.tasks.length > 0;
          const backlog = document.getElementById("backlog");
          const entries = Object.entries(snapshot.backlog || {});
          const shown = snapshot.total && snapshot.total > snapshot.tasks.length
            ? "Showing " + snapshot.tasks.length + " of " + snapshot.total + " tasks (unfinished first; ferry ls --all lists every one). " : "";
          backlog.textContent = shown + (entries.length === 0 ? "" :
            "Events waiting for their client: " + entries.map(([s, n]) => s + " " + n).join(", "));
        }
        async function act(session, task, action) {
          const path = "/api/sessions/" + encodeURIComponent(session) + "/tasks/" + task + "/" + action;
          const answer = await fetch(path, { method: "POST", headers: { "X-Ferry-Token": token } });
          if (answer.ok) render(await answer.json());
          else alert(action + " failed: " + await answer.text());
        }
        render(initial);
        if (window.EventSource) {
          const events = new EventSource("/api/events?token=" + encodeURIComponent(token));
          events.onmessage = (message) => {
            render(JSON.parse(message.data));
            document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
          };
          events.onerror = () => { document.getElementById("updated").textContent = "disconnected (is ferryd running?)"; };
        }
        </script>
        </body>
        </html>
        """#
}
