//! Starting a server and keeping it running: the connection opened on demand with retries,
//! the health that makes a server that will not start unavailable for a while, the idle stop,
//! and what a fresh connection must be told again (subscriptions, the log level).
//!
//! # Faults
//! A call that finds the server down (never started, crashed, stopped when idle) starts it,
//! trying up to [`Backoff::tries`] times with exponentially growing pauses. When every try
//! fails, the server is *unavailable* for [`Backoff::window`]: its calls fail at once with an
//! error naming it and its last error, and the catalog shows it as failed. The first call after
//! the window tries again. A crash during a call affects that server's calls only: each is
//! made again on a restarted server where that is safe, or fails saying it may have run (see
//! `calls`).

use super::*;

/// How a server that will not start is retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Starts tried by one call before the server counts as unavailable.
    pub tries: usize,
    /// The pause after the first failed try; each later pause doubles.
    pub first_delay: Duration,
    /// How long an unavailable server's calls fail at once.
    pub window: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            tries: 3,
            first_delay: Duration::from_millis(200),
            window: Duration::from_secs(30),
        }
    }
}

/// Start failures of the server.
#[derive(Default)]
pub(super) struct Health {
    pub(super) failures: u32,
    pub(super) last_error: Option<String>,
    pub(super) unavailable_until: Option<Instant>,
}

impl Inner {
    /// The live connection, started (with retries) when there is none, with one request
    /// counted in flight on it.
    pub(super) async fn connection(self: &Arc<Self>) -> Result<InFlight, UpstreamError> {
        let mut slot = self.slot.lock().await;
        if let Some(conn) = slot.as_ref() {
            if conn.is_alive() {
                return Ok(conn.begin());
            }
            tracing::warn!(server = %self.name, "the server exited; it is restarted on this call");
            if let Some(dead) = slot.take() {
                dead.close().await;
            }
        }
        let conn = self.start(None).await?;
        let in_flight = conn.begin();
        *slot = Some(Arc::clone(&conn));
        drop(slot);
        self.touch();
        if self.server().idle_timeout.is_some() {
            tokio::spawn(watch_idle(Arc::downgrade(self), Arc::downgrade(&conn)));
        }
        let held: Vec<String> = lock(&self.subscriptions).keys().cloned().collect();
        let level = *lock(&self.clients.shared_level);
        if !held.is_empty() || level.is_some() {
            tokio::spawn(async move { renew(&conn.begin(), level, &held).await });
        }
        // A discovery running now (which may have started this connection) covers it.
        let stale = !read(&self.view).record.is_current() && self.discovery.try_lock().is_ok();
        if stale {
            let inner = Arc::clone(self);
            tokio::spawn(async move { Inner::rediscover_live(&inner, true).await });
        }
        Ok(in_flight)
    }

    /// Opens a new connection, trying up to [`Backoff::tries`] times, unless the server is
    /// retired, disabled or unavailable; keeps the server's health. The shared connection and
    /// every per-client one are opened here (the caller holds the slot it fills); a per-client
    /// one (`client`: its session and that session's way back) hands what the server sends
    /// outside calls to that session alone.
    pub(super) async fn start(
        self: &Arc<Self>,
        client: Option<(&str, &Arc<Outlet>)>,
    ) -> Result<Arc<Connection>, UpstreamError> {
        if self.retired.is_cancelled() {
            return Err(UpstreamError::Retired {
                server: self.name.clone(),
            });
        }
        if !self.server().enabled {
            return Err(UpstreamError::Disabled {
                server: self.name.clone(),
            });
        }
        if let Some(reason) = &self.unavailable {
            return Err(UpstreamError::Start {
                server: self.name.clone(),
                message: reason.clone(),
            });
        }
        {
            let health = lock(&self.health);
            if let Some(until) = health.unavailable_until {
                let now = Instant::now();
                if now < until {
                    return Err(UpstreamError::Unavailable {
                        server: self.name.clone(),
                        attempts: health.failures,
                        last_error: health.last_error.clone().unwrap_or_default(),
                        retry_in: until - now,
                    });
                }
            }
        }
        let weak = Arc::downgrade(self);
        let open = || {
            let hooks = ServerHooks {
                on_list_changed: lists_changed(weak.clone()),
                on_resource_updated: resource_updated(
                    weak.clone(),
                    client.map(|c| c.0.to_string()),
                ),
            };
            // Each connection has its own: rmcp's progress tokens and request ids are per
            // connection, and start again after a restart.
            let callers = match client {
                Some((_, outlet)) => Callers::for_session(Arc::clone(outlet)),
                None => Callers::default(),
            };
            let handler = Handler::new(&self.name, hooks, Arc::new(callers));
            let endpoint = self.endpoint.clone();
            async move { Connection::open(&endpoint, handler).await }
        };
        let retries = self.backoff.tries.saturating_sub(1);
        let opened = open
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(self.backoff.first_delay)
                    .with_max_times(retries),
            )
            // A server that wants sign-in, or refuses the configured credential, says so at
            // once; asking again changes nothing.
            .when(|e| {
                !matches!(
                    e,
                    UpstreamError::NeedsSignIn { .. } | UpstreamError::CredentialRejected { .. }
                )
            })
            .notify(|e, pause| {
                tracing::debug!(error = %e, retry_in_ms = pause.as_millis() as u64, "start failed; retrying");
            })
            .await;
        match opened {
            Ok(conn) => {
                let was_failing = {
                    let mut health = lock(&self.health);
                    let was = health.unavailable_until.is_some();
                    *health = Health::default();
                    was
                };
                if was_failing {
                    self.notify();
                }
                Ok(Arc::new(conn))
            }
            // Not a failure to back off from: it works as soon as a person signs in, or the
            // configured credential is changed (which starts the server anew).
            Err(
                e @ (UpstreamError::NeedsSignIn { .. } | UpstreamError::CredentialRejected { .. }),
            ) => Err(e),
            Err(e) => {
                {
                    let mut health = lock(&self.health);
                    health.failures = health.failures.saturating_add(self.backoff.tries as u32);
                    health.last_error = Some(e.to_string());
                    health.unavailable_until = Some(Instant::now() + self.backoff.window);
                }
                self.notify();
                Err(e)
            }
        }
    }
}

/// Tells a new connection what the one before was told: the log level asked for and the
/// resources someone still subscribes to.
pub(super) async fn renew(conn: &Connection, level: Option<LogLevel>, uris: &[String]) {
    if let Some(level) = level
        && let Err(e) = conn.set_level(level).await
    {
        tracing::warn!(?level, error = %describe(&e), "cannot renew the log level");
    }
    for uri in uris {
        if let Err(e) = conn.subscribe(uri).await {
            tracing::warn!(uri, error = %describe(&e), "cannot renew a resource subscription");
        }
    }
}

/// The callback for a server's `resources/updated`: tell the subscribers — on a per-client
/// connection, only those of its `session`.
fn resource_updated(
    source: Weak<Inner>,
    session: Option<String>,
) -> Arc<dyn Fn(String) + Send + Sync> {
    Arc::new(move |uri| {
        if let Some(inner) = source.upgrade() {
            // No receiver means no session subscribes any more; nothing to tell.
            let _ = inner.updates.send(ResourceUpdate {
                session: session.clone(),
                uri,
            });
        }
    })
}

/// Closes a connection once it has had no call in flight for the server's `idleTimeoutMs`,
/// read afresh each time (a reconfiguration may change or remove it).
pub(super) async fn watch_idle(source: Weak<Inner>, conn: Weak<Connection>) {
    let mut wait = Duration::ZERO;
    loop {
        tokio::time::sleep(wait).await;
        let (Some(inner), Some(watched)) = (source.upgrade(), conn.upgrade()) else {
            return;
        };
        let Some(idle) = inner.server().idle_timeout else {
            return; // no longer stopped when idle
        };
        let mut slot = inner.slot.lock().await;
        let current = slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, &watched));
        if !current || !watched.is_alive() {
            return;
        }
        let quiet = lock(&inner.last_used).elapsed();
        let subscribed = !lock(&inner.subscriptions).is_empty();
        if watched.in_flight() == 0 && !subscribed && quiet >= idle {
            tracing::info!(server = %inner.name, "stopping the server after {}ms idle", idle.as_millis());
            slot.take();
            drop(slot);
            watched.close().await;
            return;
        }
        wait = idle.saturating_sub(quiet).max(Duration::from_millis(10));
    }
}
