#!/usr/bin/env bash
# scripts/fresh-machine.sh [STEP...]: runs `npm ci` and the README's test command inside a fresh
# Debian 12 root filesystem that has only Node.js, as root, the way a fresh container or VM would
# (docs/testing.md, "On a fresh machine"). Not part of CI: it needs root, debootstrap and a Debian
# mirror on the host, and takes about half an hour.
#
# Steps (all, in this order, when none is named):
#   root      debootstrap --variant=minbase bookworm into $FRESH_ROOT (kept and reused when present)
#   node      this machine's node binary and npm, nothing else (a machine with "only Node.js")
#   repo      a git clone of this repository's HEAD into $FRESH_ROOT/root/cell-factory (no node_modules)
#   ci        npm ci
#   prereqs   npm run test:prereqs (apt-get installs; the pip step needs PyPI)
#   python    copies moto and cfn-lint from this machine's Python when PyPI cannot be reached (below)
#   unit      npm run test:unit
#   integration  npx jest over $FRESH_INTEGRATION (a subset: one file per prerequisite), one at a time
#   containers   whether buildah and podman work in the root at all, in seconds: imports a
#                one-binary image, runs it with podman (runc, with lib/images' containers.conf) and
#                with buildah run (chroot isolation)
#
# Environment: FRESH_ROOT (default /var/tmp/fresh-debian), FRESH_MIRROR (default
# http://deb.debian.org/debian), FRESH_PYTHON_SITE (the site-packages to copy moto and cfn-lint from;
# default: where this machine's python3 finds moto), FRESH_INTEGRATION (test files), FRESH_CA_FILE (below).
#
# The `python` step stands in for PyPI on a machine that cannot reach it: it copies the installed
# distributions moto[server] and cfn-lint need (their dependency closure, from their metadata) into
# the root's /usr/local/lib/python3.11/dist-packages and writes their console scripts, which is what
# `pip install` would have left there. Where `test:prereqs` installed them itself, it does nothing.
# Mounts (/proc, /sys, /dev, /dev/pts, /dev/shm, resolv.conf) are undone on every exit.
set -euo pipefail
ROOT=${FRESH_ROOT:-/var/tmp/fresh-debian}
MIRROR=${FRESH_MIRROR:-http://deb.debian.org/debian}
REPO=$(cd "$(dirname "$0")/.." && pwd)
INTEGRATION=${FRESH_INTEGRATION:-test/router/local.test.ts test/router/tls-zones.test.ts test/support/postgres.test.ts test/workload/credentials.test.ts test/local-fleet/port.test.ts test/audit/report.test.ts test/support/moto.test.ts test/accounts/moto.test.ts test/audit/cfn-lint.test.ts test/images/build.test.ts}
STEPS=${*:-root node repo ci prereqs python unit integration containers}

say() { printf '\n== fresh-machine: %s (%s)\n' "$*" "$(date -u +%H:%M:%S)" >&2; }
[ "$(id -u)" -eq 0 ] || { echo "scripts/fresh-machine.sh needs root (debootstrap, chroot, mounts); run it with sudo" >&2; exit 1; }

MOUNTED=()
unmount_all() {
  local i m
  # podman's storage mounts itself (overlay) inside the root.
  for m in $(findmnt -rno TARGET | grep "^$ROOT/var/lib/containers/" | sort -r); do umount -l "$m" 2>/dev/null || true; done
  for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTED[$i]}" 2>/dev/null || true; done
  MOUNTED=()
}
trap unmount_all EXIT INT TERM
mount_into() { # mount_into TARGET MOUNT-ARGS...
  local target=$ROOT$1; shift
  [ -e "$target" ] || mkdir -p "$target"
  mountpoint -q "$target" || { mount "$@" "$target"; MOUNTED+=("$target"); }
}
mount_all() {
  # A container's / is a mount point; podman and buildah remount it while unpacking a layer.
  mountpoint -q "$ROOT" || { mount --bind "$ROOT" "$ROOT"; MOUNTED+=("$ROOT"); }
  mount_into /proc -t proc proc
  # /sys with the cgroup hierarchies below it, as a privileged container sees it (podman's runc needs them).
  mount_into /sys --rbind /sys
  # /dev as a container runtime makes it: a tmpfs with the usual nodes, its own devpts, and a
  # /dev/shm of Docker's default 64 MB (chromium and PostgreSQL use it).
  if ! mountpoint -q "$ROOT/dev"; then
    mount_into /dev -t tmpfs dev -o mode=0755,nosuid,size=64k
    local node
    for node in 'null 1 3' 'zero 1 5' 'full 1 7' 'random 1 8' 'urandom 1 9' 'tty 5 0'; do
      set -- $node; mknod -m 0666 "$ROOT/dev/$1" c "$2" "$3"
    done
    ln -s pts/ptmx "$ROOT/dev/ptmx"; ln -s /proc/self/fd "$ROOT/dev/fd"
    ln -s /proc/self/fd/0 "$ROOT/dev/stdin"; ln -s /proc/self/fd/1 "$ROOT/dev/stdout"; ln -s /proc/self/fd/2 "$ROOT/dev/stderr"
  fi
  mount_into /dev/pts -t devpts devpts -o newinstance,ptmxmode=0666,mode=0620
  mount_into /dev/shm -t tmpfs shm -o mode=1777,nosuid,nodev,size=64m
  touch "$ROOT/etc/resolv.conf"
  mount_into /etc/resolv.conf --bind /etc/resolv.conf
}
# A network that reaches the registry through a TLS-inspecting proxy needs its CA: FRESH_CA_FILE
# (default: this machine's NODE_EXTRA_CA_CERTS) is copied into the root and given to node as
# NODE_EXTRA_CA_CERTS, and to nothing else (the root gets no ca-certificates package from it).
CA_FILE=${FRESH_CA_FILE-${NODE_EXTRA_CA_CERTS:-}}
CA_ENV=()
if [ -n "$CA_FILE" ]; then
  install -D -m 0644 "$CA_FILE" "$ROOT/etc/fresh-machine/extra-ca.crt"
  CA_ENV=(NODE_EXTRA_CA_CERTS=/etc/fresh-machine/extra-ca.crt)
fi
# Inside the root as root, with a login-like environment (no host PATH, HOME or locale).
in_root() {
  chroot "$ROOT" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${CA_ENV[@]}" \
    /bin/bash -c "cd /root/cell-factory 2>/dev/null || cd /root; $1"
}
timed() { # timed LABEL COMMAND: runs COMMAND in the root, prints its wall time
  local start=$SECONDS status=0
  say "$1"
  in_root "$2" || status=$?
  say "$1: exit $status after $((SECONDS - start)) s"
  return "$status"
}

for step in $STEPS; do
  case $step in
    root)
      if [ -f "$ROOT/etc/debian_version" ] && [ -x "$ROOT/usr/bin/apt-get" ]; then
        say "reusing $ROOT (Debian $(cat "$ROOT/etc/debian_version"))"
      else
        say "debootstrap bookworm into $ROOT"
        debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR"
      fi
      # What the installer (or a container runtime) writes and debootstrap does not.
      [ -s "$ROOT/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$ROOT/etc/hosts"
      ;;
    node)
      say "node $(node --version) and npm $(npm --version) from this machine"
      node_bin=$(readlink -f "$(command -v node)")
      npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
      install -m 0755 "$node_bin" "$ROOT/usr/local/bin/node"
      rm -rf "$ROOT/usr/local/lib/node_modules/npm"
      mkdir -p "$ROOT/usr/local/lib/node_modules"
      cp -a "$npm_dir" "$ROOT/usr/local/lib/node_modules/npm"
      ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$ROOT/usr/local/bin/npm"
      ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$ROOT/usr/local/bin/npx"
      ;;
    repo)
      say "git clone $REPO ($(git -C "$REPO" rev-parse --short HEAD)) into $ROOT/root/cell-factory"
      rm -rf "$ROOT/root/cell-factory"
      git clone -q "$REPO" "$ROOT/root/cell-factory"
      ;;
    ci)
      mount_all
      timed "npm ci" 'npm ci --no-audit --no-fund'
      ;;
    prereqs)
      mount_all
      timed "npm run test:prereqs" 'npm run -s test:prereqs' || true
      ;;
    python)
      mount_all
      if in_root 'command -v moto_server >/dev/null && command -v cfn-lint >/dev/null'; then
        say "moto_server and cfn-lint are installed in the root: nothing to copy"
        continue
      fi
      in_root 'command -v python3 >/dev/null' || { echo "no python3 in the root: run the prereqs step first (it installs python3-pip)" >&2; exit 1; }
      site=${FRESH_PYTHON_SITE:-$(python3 -c 'import moto, os; print(os.path.dirname(os.path.dirname(moto.__file__)))')}
      dest=$ROOT/usr/local/lib/python3.11/dist-packages
      say "PyPI stand-in: copying moto[server], cfn-lint and their dependencies from $site to $dest"
      mkdir -p "$dest"
      # The installed distributions moto[server] and cfn-lint need, with their files (RECORD).
      PYTHONPATH=$site python3 - "$site" "$dest" "$ROOT/usr/local/bin" <<'PY'
import importlib.metadata as md, os, re, shutil, sys
from packaging.requirements import Requirement
site, dest, bindir = sys.argv[1:]
dists = {re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d for d in md.distributions(path=[site])}
need, todo = {}, [('moto', {'server'}), ('cfn-lint', set())]
while todo:
    name, extras = todo.pop()
    key = re.sub(r'[-_.]+', '-', name).lower()
    if key in need and extras <= need[key]:
        continue
    need[key] = need.get(key, set()) | extras
    for req in dists[key].requires or []:
        r = Requirement(req)
        if r.marker and not any(r.marker.evaluate({'extra': e}) for e in (need[key] or {''})):
            continue
        if re.sub(r'[-_.]+', '-', r.name).lower() in dists:
            todo.append((r.name, set(r.extras)))
for key in sorted(need):
    d = dists[key]
    for f in d.files or []:
        src = os.path.normpath(os.path.join(site, f))
        if not src.startswith(site + os.sep) or not os.path.isfile(src) or '__pycache__' in f.parts:
            continue
        out = os.path.join(dest, os.path.relpath(src, site))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copy2(src, out)
    for ep in d.entry_points:
        if ep.group != 'console_scripts':
            continue
        module, _, attr = ep.value.partition(':')
        path = os.path.join(bindir, ep.name)
        with open(path, 'w') as s:
            s.write(f"#!/usr/bin/python3\nimport re, sys\nfrom {module} import {attr.split('.')[0]}\n"
                    f"if __name__ == '__main__':\n    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
                    f"    sys.exit({attr}())\n")
        os.chmod(path, 0o755)
print(f"copied {len(need)} distributions: {' '.join(sorted(need))}", file=sys.stderr)
PY
      timed "npm run test:prereqs (again, with the PyPI stand-in)" 'npm run -s test:prereqs'
      ;;
    unit)
      mount_all
      timed "npm run test:unit" 'npm run -s test:unit' || true
      ;;
    integration)
      mount_all
      timed "integration subset: $INTEGRATION" "npx jest --selectProjects integration --runInBand $INTEGRATION" || true
      ;;
    containers)
      mount_all
      timed "buildah and podman in the root" '
        set -e; export CONTAINERS_CONF=$(npx tsx -e "console.log(require(\"./lib/images/podman\").containerEnv().CONTAINERS_CONF)")
        ctx=$(mktemp -d); mkdir -p "$ctx/sbin"; cp /sbin/ldconfig "$ctx/sbin/"
        tar -C "$ctx" -c . | podman import -q - localhost/fresh-machine-probe >/dev/null; rm -rf "$ctx"
        podman run --rm --network host localhost/fresh-machine-probe /sbin/ldconfig --version | head -1
        c=$(buildah --isolation chroot from -q localhost/fresh-machine-probe)
        buildah --isolation chroot run "$c" /sbin/ldconfig --version | head -1
        buildah rm "$c" >/dev/null; podman rmi -f localhost/fresh-machine-probe >/dev/null' || true
      ;;
    *)
      echo "scripts/fresh-machine.sh: unknown step \`$step\`; use root node repo ci prereqs python unit integration containers" >&2
      exit 2
      ;;
  esac
done
