/**
 * What `/` answers until the board page exists: where the API and its description are.
 * Nothing here needs a token, and nothing here is secret.
 * @module
 */

const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>svc dashboard</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto">
<h1>svc dashboard</h1>
<p>The API lives under <code>/api/</code>; every route needs
<code>Authorization: Bearer &lt;token&gt;</code>.</p>
<p>Its description: <a href="/api/openapi.json"><code>/api/openapi.json</code></a>
(the same token).</p>
</body>
</html>
`;

/** The page at `/`. */
export function landingPage(): Response {
  return new Response(PAGE, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
      "x-content-type-options": "nosniff",
    },
  });
}
