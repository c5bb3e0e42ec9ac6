// A JavaScript agent's use of the HTTP API, with node's built-in fetch: append a conversation,
// then ask for it fitted to a small model, and print what it got (JSON on stdout).
const [base, token] = process.argv.slice(2);
const headers = { "content-type": "application/json", authorization: `Bearer ${token}` };

async function call(method, path, body) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) {
    throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  }
  return answer;
}

const messages = [{ role: "system", content: "You plan trips.", id: "js-sys" }];
for (let k = 0; k < 60; k++) {
  messages.push({ role: "user", content: `Day ${k}: which museum opens first? `.repeat(20), id: `js-u${k}` });
  messages.push({ role: "assistant", content: `Museum ${k} opens at nine. `.repeat(20), id: `js-a${k}` });
}
const appended = await call("POST", "/v1/sessions/js-agent/append", { messages });
await call("POST", "/v1/sessions/js-agent/append", {
  messages: [{ role: "user", content: "And the museum?", id: "js-last" }],
});
const fitted = await call("POST", "/v1/sessions/js-agent/build_outbound", { model: "gpt-4" });
console.log(JSON.stringify({
  appended: appended.appended,
  decision: fitted.decision,
  sent: fitted.messages.length,
  last: fitted.messages[fitted.messages.length - 1].content,
}));
