#!/usr/bin/env sh
# What `npm test` needs besides Node packages, installed or started when missing. Idempotent: on a
# machine that has everything it only checks. `.ci/run` and the README's test command both go through it.
#
#   osmium    (Debian osmium-tool)  the OpenStreetMap import tests count objects with it
#   chromium  (Debian chromium)     the dashboard's browser test drives it through playwright-core
#   sqlite3   (Debian sqlite3)      the SQLite shell opens an imported database (an ordinary file, migration 0027)
#   PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379, started if this machine has them stopped
#
# Without root (or apt-get) it installs nothing; a test that needs a missing tool then fails with one
# line naming the tool and its package.
set -u

missing=""
command -v osmium >/dev/null 2>&1 || missing="$missing osmium-tool"
[ -x /usr/bin/chromium ] || missing="$missing chromium"
command -v sqlite3 >/dev/null 2>&1 || missing="$missing sqlite3"

if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test-deps: installing$missing (Debian packages)"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null \
      || echo "test-deps: could not install$missing; the tests that need them will say so"
  else
    echo "test-deps: missing$missing; install with: sudo apt-get install$missing (the tests that need them will fail until then)"
  fi
fi

if command -v pg_isready >/dev/null 2>&1 && ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "test-deps: starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
fi
if command -v redis-cli >/dev/null 2>&1 && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "test-deps: starting Redis"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  fi
fi
exit 0
