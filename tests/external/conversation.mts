// The TypeScript half of tests/api/test_generated_clients.py: a conversation with the live
// test server through openapi-fetch, typed by what openapi-typescript generated from
// /api/schema/. Reads its settings as JSON on stdin; prints a JSON summary as its last line;
// exits non-zero on the first answer that is not what the schema declares.
import createClient from "openapi-fetch";
import type { components, paths } from "./build/schema.js";

type ErrorEnvelope = components["schemas"]["ErrorEnvelope"];
type Settings = {
  baseUrl: string;
  apiKey: string;
  readOnlyKey: string;
  username: string;
  receiverUrl: string;
  rows: number;
};

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

// Every error answer is read as the declared ErrorEnvelope and checked field by field.
const errorsSeen: number[] = [];
function expectError(
  answer: { error?: ErrorEnvelope; response: Response },
  status: number,
  code: string,
): void {
  const { error, response } = answer;
  check(response.status === status, `expected ${status}, got ${response.status}`);
  check(error !== undefined, `${status}: no error body`);
  check(error.status === status && error.code === code, `${status}: ${JSON.stringify(error)}`);
  check(error.request_id === response.headers.get("X-Request-Id"), "request_id differs");
  check(error.docs_url.endsWith(`/docs/errors#${code}`), `docs_url ${error.docs_url}`);
  errorsSeen.push(status);
}

async function main(settings: Settings): Promise<void> {
  const client = createClient<paths>({
    baseUrl: settings.baseUrl,
    headers: { Authorization: `Bearer ${settings.apiKey}` },
  });

  const me = await client.GET("/api/v2/me");
  check(me.data?.data.username === settings.username, `me: ${JSON.stringify(me.error)}`);
  const stores = await client.GET("/api/v2/stores");
  check(stores.data?.data.length === 0, "a new user has no store");

  // a store, created with an Idempotency-Key, and the replay of that request
  const key = `create-${crypto.randomUUID()}`;
  const body = { name: "Generated TypeScript", slug: "generated-typescript" };
  const created = await client.POST("/api/v2/stores", {
    params: { header: { "Idempotency-Key": key } },
    body,
  });
  check(created.response.status === 201 && created.data, `create: ${created.response.status}`);
  const store = created.data.data;
  const replayed = await client.POST("/api/v2/stores", {
    params: { header: { "Idempotency-Key": key } },
    body,
  });
  check(replayed.data?.data.id === store.id, "the replay answers the same store");
  check(replayed.response.headers.get("Idempotent-Replayed") === "true", "replay header");
  const read = await client.GET("/api/v2/stores/{store}", {
    params: { path: { store: Number(store.id) } },
  });
  check(read.data?.data.slug === store.slug, "store read");

  const other = { name: "Other", slug: "generated-other-ts" };
  expectError(
    await client.POST("/api/v2/stores", {
      params: { header: { "Idempotency-Key": key } },
      body: other,
    }),
    409,
    "conflict",
  );
  expectError(
    await client.POST("/api/v2/stores", {
      params: { header: { "Idempotency-Key": `k-${crypto.randomUUID()}` } },
      body: other,
    }),
    429,
    "rate_limit_exceeded",
  );

  const inStore = { header: { "X-STORE": store.slug } };
  const destination = await client.PUT("/api/v2/webhook-destination", {
    params: inStore,
    body: { url: settings.receiverUrl, event_types: ["coupon.created"], enabled: true },
  });
  check(destination.response.status === 201, `destination: ${destination.response.status}`);

  // coupon CRUD, and a 40-row list read page by page through links.next
  const coupons: number[] = [];
  for (let number = 0; number < settings.rows; number++) {
    const coupon = await client.POST("/api/v1/coupons", {
      params: inStore,
      body: {
        code: `TS${String(number).padStart(2, "0")}`,
        type: "PERCENTAGE",
        discount: 10,
        store_wide: true,
      },
    });
    check(coupon.data, `coupon ${number}: ${JSON.stringify(coupon.error)}`);
    coupons.push(coupon.data.id);
  }
  const first = coupons[0];
  check(first !== undefined, "coupons created");
  const coupon = await client.GET("/api/v1/coupons/{id}", {
    params: { ...inStore, path: { id: first } },
  });
  check(coupon.data?.code === "TS00", "coupon read");
  const changed = await client.PATCH("/api/v1/coupons/{id}", {
    params: { ...inStore, path: { id: first } },
    body: { discount: 25 },
  });
  check(changed.data?.discount === "25.00", "coupon changed");
  const deleted = await client.DELETE("/api/v1/coupons/{id}", {
    params: { ...inStore, path: { id: first } },
  });
  check(deleted.response.status === 204, "coupon deleted");
  expectError(
    await client.GET("/api/v1/coupons/{id}", { params: { ...inStore, path: { id: first } } }),
    404,
    "resource_not_found",
  );
  const trashed = await client.GET("/api/v1/coupons", {
    params: { ...inStore, query: { only_trashed: "true" } },
  });
  check(trashed.data?.data.map((c) => c.id).join() === String(first), "only_trashed");

  let pages = 0;
  const listed = new Set<number>();
  let page = await client.GET("/api/v1/coupons", {
    params: { ...inStore, query: { limit: 15, with_trashed: "true" } },
  });
  for (;;) {
    check(page.data, `page ${pages + 1}: ${JSON.stringify(page.error)}`);
    pages++;
    page.data.data.forEach((c) => listed.add(c.id));
    const next = page.data.links.next;
    if (next === null) break;
    const query = new URL(next).searchParams;
    page = await client.GET("/api/v1/coupons", {
      params: {
        ...inStore,
        query: {
          limit: Number(query.get("limit")),
          page: Number(query.get("page")),
          with_trashed: query.get("with_trashed") === "true" ? "true" : "false",
        },
      },
    });
  }
  check(coupons.every((id) => listed.has(id)), "every coupon listed once");

  // the event journal, polled until has_more is false
  const events: components["schemas"]["Event"][] = [];
  let cursor: string | undefined;
  for (;;) {
    const polled = await client.GET("/api/v2/events", {
      params: { ...inStore, query: cursor ? { limit: 7, cursor } : { limit: 7 } },
    });
    check(polled.data, `events: ${JSON.stringify(polled.error)}`);
    events.push(...polled.data.data);
    cursor = polled.data.meta.next_cursor;
    if (!polled.data.meta.has_more) break;
  }
  check(events.slice(-2).map((e) => e.type).join() === "coupon.updated,coupon.deleted", "events");

  // a delivery replayed, with an Idempotency-Key
  const deliveries = await client.GET("/api/v2/webhook-deliveries", { params: inStore });
  const original = deliveries.data?.data[0];
  check(original && deliveries.data?.meta.total === settings.rows, "deliveries listed");
  const replay = await client.POST("/api/v2/webhook-deliveries/{delivery}/replay", {
    params: {
      header: { ...inStore.header, "Idempotency-Key": `replay-${crypto.randomUUID()}` },
      path: { delivery: original.id },
    },
    body: {},
  });
  const replayedDelivery = replay.data?.data;
  check(
    replayedDelivery?.event_id === original.event_id && replayedDelivery.id !== original.id,
    `replay: ${JSON.stringify(replay.error)}`,
  );

  // the remaining error statuses, each read as the declared ErrorEnvelope
  const anonymous = createClient<paths>({
    baseUrl: settings.baseUrl,
    headers: { Authorization: "Bearer sf_not_a_key" },
  });
  expectError(await anonymous.GET("/api/v2/me"), 401, "unauthenticated");
  const readOnly = createClient<paths>({
    baseUrl: settings.baseUrl,
    headers: { Authorization: `Bearer ${settings.readOnlyKey}` },
  });
  expectError(await readOnly.GET("/api/v1/coupons", { params: inStore }), 403, "forbidden");
  const invalid = await client.POST("/api/v1/coupons", {
    params: inStore,
    body: { code: "TS01", type: "PERCENTAGE", discount: 10, store_wide: true },
  });
  expectError(invalid, 422, "validation_failed");
  check(invalid.error?.errors?.["code"] !== undefined, "422 names the field");

  console.log(
    JSON.stringify({
      pages,
      listed: listed.size,
      events: events.length,
      replayed: true,
      errors: [...errorsSeen].sort((a, b) => a - b),
    }),
  );
}

let input = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) input += chunk;
await main(JSON.parse(input) as Settings);
