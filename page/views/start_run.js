/**
 * Starting a run from the page: a script pasted, picked from a file or taken from the samples,
 * with `args`, a budget, a timeout and fake dispatch; `POST /api/workflow/run`.
 */
import { html, useState } from "../lib/html.js";
import { useAction } from "../lib/action.js";
import { seg } from "../lib/format.js";
import { ErrorBox, Section } from "../lib/ui.js";

/** Scripts to start from: each shows one primitive of the engine. */
const SAMPLES = {
  "fan-out": {
    filename: "fan_out.js",
    script: `export const meta = { name: "fan-out", phases: ["ask", "sum up"] };

phase("ask");
const topics = args?.topics ?? ["tests", "docs", "types"];
const answers = await parallel(
  topics.map((topic) => () => agent(\`Review the \${topic} of this repository\`, { label: topic })),
);
phase("sum up");
log(\`\${answers.length} reviews in\`);
return await agent(\`Summarise: \${answers.join("\\n")}\`, { label: "summary" });
`,
    args: '{ "topics": ["tests", "docs", "types"] }',
  },
  pipeline: {
    filename: "pipeline.js",
    script: `export const meta = { name: "pipeline", phases: ["draft", "review"] };

const items = args?.items ?? ["a", "b", "c"];
return await pipeline(
  items,
  (item) => agent(\`Draft \${item}\`, { label: \`draft \${item}\`, phase: "draft" }),
  (draft) => agent(\`Review: \${draft}\`, { label: "review", phase: "review" }),
);
`,
    args: '{ "items": ["a", "b", "c"] }',
  },
  sequential: {
    filename: "steps.js",
    script: `export const meta = { name: "steps" };

let text = "start";
for (let i = 1; i <= (args?.steps ?? 3); i++) {
  phase(\`step \${i}\`);
  text = await agent(\`Improve: \${text}\`, { label: \`step \${i}\` });
  log(\`step \${i} done\`);
}
return text;
`,
    args: '{ "steps": 3 }',
  },
};

function numberOrUndefined(text, name, { integer = false } = {}) {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  const value = Number(trimmed);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a ${integer ? "whole " : ""}number above 0`);
  }
  return value;
}

/** The body of `POST /api/workflow/run` from the form; throws, naming the field, on bad input. */
function requestBody(form, cardId) {
  const body = {
    script: form.script,
    filename: form.filename || "script.js",
    fake_dispatch: form.fake,
  };
  if (cardId) body.card_id = cardId;
  if (form.args.trim() !== "") {
    try {
      body.args = JSON.parse(form.args);
    } catch (e) {
      throw new Error(`args must be JSON: ${e.message}`);
    }
  }
  const timeout = numberOrUndefined(form.timeout, "timeout", { integer: true });
  if (timeout !== undefined) body.timeout = timeout;
  const tokens = numberOrUndefined(form.budgetTokens, "the token budget", { integer: true });
  if (tokens !== undefined) body.budget_tokens = tokens;
  const usd = numberOrUndefined(form.budgetUsd, "the USD budget");
  if (usd !== undefined) body.budget_usd = usd;
  return body;
}

/** `#/runs/new`. */
export function StartRunView({ api, cardId }) {
  const [form, setForm] = useState({
    script: "",
    filename: "script.js",
    args: "",
    budgetTokens: "",
    budgetUsd: "",
    timeout: "3600",
    fake: true,
  });
  const { busy, error, setError, run } = useAction();
  const set = (key) => (event) => {
    const target = event.currentTarget;
    setForm((f) => ({ ...f, [key]: target.type === "checkbox" ? target.checked : target.value }));
  };
  const pickSample = (event) => {
    const sample = SAMPLES[event.currentTarget.value];
    if (sample) {
      setForm((f) => ({
        ...f,
        script: sample.script,
        filename: sample.filename,
        args: sample.args,
      }));
    }
  };
  const pickFile = async (event) => {
    const file = event.currentTarget.files?.[0];
    if (!file) return;
    if (file.size > 1024 * 1024) {
      setError(new Error(`${file.name} is larger than 1 MiB: not a workflow script`));
      return;
    }
    const script = await file.text();
    setForm((f) => ({ ...f, script, filename: file.name.replace(/[^A-Za-z0-9._-]/g, "_") }));
  };
  const submit = (event) => {
    event.preventDefault();
    run(async () => {
      const started = await api.json("/api/workflow/run", { body: requestBody(form, cardId) });
      location.hash = `#/runs/${seg(started.run_id)}`;
    });
  };
  return html`
    <${Section} title=${cardId ? `Start a run for card #${cardId}` : "Start a run"}>
      <form class="start-run" onSubmit=${submit}>
        <div class="row">
          <label>Sample <select onChange=${pickSample} aria-label="sample script">
              <option value="">choose…</option>
              ${Object.keys(SAMPLES).map((name) => html`<option value=${name}>${name}</option>`)}
            </select></label>
          <label>File <input type="file" accept=".js,.mjs,text/javascript" onChange=${pickFile} /></label>
          <label>Name <input name="filename" value=${form.filename} onInput=${set(
            "filename",
          )} maxlength="255" /></label>
        </div>
        <label for="script">Script</label>
        <textarea id="script" name="script" class="code" rows="16" spellcheck=${false} required
          placeholder="return await agent('Say hello');" value=${form.script}
          onInput=${set("script")}></textarea>
        <label for="args">args (JSON, optional)</label>
        <textarea id="args" name="args" class="code" rows="3" spellcheck=${false} value=${form.args}
          onInput=${set("args")}></textarea>
        <div class="row">
          <label>Budget (tokens) <input name="budget_tokens" inputmode="numeric" value=${form
            .budgetTokens} onInput=${set("budgetTokens")} /></label>
          <label>Budget (USD) <input name="budget_usd" inputmode="decimal" value=${form
            .budgetUsd} onInput=${set("budgetUsd")} /></label>
          <label>Timeout (s) <input name="timeout" inputmode="numeric" value=${form
            .timeout} onInput=${set("timeout")} /></label>
          <label
            class="check"><input type="checkbox" name="fake_dispatch" checked=${form
              .fake} onChange=${set("fake")} /> Fake dispatch (no real agent is called)</label>
        </div>
        <${ErrorBox} error=${error} title="Cannot start the run" />
        <div class="actions">
          <button type="submit" class="primary" disabled=${busy}>${busy
            ? "Starting…"
            : "Start the run"}</button>
          <a class="button" href="#/runs">Back to runs</a>
        </div>
      </form>
      <//>
  `;
}
