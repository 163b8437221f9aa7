import type { SchemaStep } from './schema-steps.ts';

/** Steps 0013 on: settings changed in the app, and the notifications' outbox and push subscriptions (see schema-steps.ts for the rules). */
export const SETTINGS_AND_NOTIFICATION_STEPS: SchemaStep[] = [
  {
    // One document of what admins set in the app (id 1), and one record per change, keyed by the
    // version it made: a change made from an older version collides with the record of the next.
    name: '0013 settings changed in the app, and who changed what',
    postgres: [
      `
        create table app_settings (
          id integer primary key check (id = 1),
          version integer not null,
          settings json not null,
          updated_at timestamptz not null default now()
        )
      `,
      `
        create table settings_changes (
          version integer primary key,
          at timestamptz not null default now(),
          user_id text not null,
          user_name text not null,
          changes json not null
        )
      `,
    ],
    sqlite: [
      `
        create table app_settings (
          id integer primary key check (id = 1),
          version integer not null,
          settings text not null,
          updated_at text not null
        ) strict
      `,
      `
        create table settings_changes (
          version integer primary key,
          at text not null,
          user_id text not null,
          user_name text not null,
          changes text not null
        ) strict
      `,
    ],
  },
  {
    // Notifications (webhooks) waiting for delivery: one row per delivery, claimed by one instance
    // at a time until `held_until`, kept once delivered or given up (their history).
    name: '0014 notifications waiting for delivery (an outbox)',
    postgres: [
      `
        create table deliveries (
          id text primary key,
          target text not null,
          payload text not null,
          attempts integer not null default 0,
          status text not null default 'pending',
          due_at timestamptz not null,
          held_by text,
          held_until timestamptz,
          last_error text,
          created_at timestamptz not null default now()
        )
      `,
      `create index deliveries_due on deliveries (due_at) where status = 'pending'`,
    ],
    sqlite: [
      `
        create table deliveries (
          id text primary key,
          target text not null,
          payload text not null,
          attempts integer not null default 0,
          status text not null default 'pending',
          due_at text not null,
          held_by text,
          held_until text,
          last_error text,
          created_at text not null
        ) strict
      `,
      `create index deliveries_due on deliveries (due_at) where status = 'pending'`,
    ],
  },
  {
    // Web Push: each browser's subscription, for the person who made it; and keys the server makes
    // once and every instance reads (the VAPID key pair push services know the server by).
    name: '0015 push subscriptions and the server’s own keys',
    postgres: [
      `
        create table push_subscriptions (
          endpoint text primary key,
          user_id text not null,
          p256dh text not null,
          auth text not null,
          created_at timestamptz not null default now()
        )
      `,
      `create index push_subscriptions_user on push_subscriptions (user_id)`,
      `create table server_keys (name text primary key, value text not null)`,
    ],
    sqlite: [
      `
        create table push_subscriptions (
          endpoint text primary key,
          user_id text not null,
          p256dh text not null,
          auth text not null,
          created_at text not null
        ) strict
      `,
      `create index push_subscriptions_user on push_subscriptions (user_id)`,
      `create table server_keys (name text primary key, value text not null) strict`,
    ],
  },
];

/** Step 0017: each person's own webhook (multi-user modes), with the secret its deliveries are signed with. */
export const USER_WEBHOOKS_STEP: SchemaStep = {
  name: '0018 a webhook of each person’s own',
  postgres: [`create table user_webhooks (user_id text primary key, url text not null, secret text not null, updated_at timestamptz not null default now())`],
  sqlite: [`create table user_webhooks (user_id text primary key, url text not null, secret text not null, updated_at text not null) strict`],
};
