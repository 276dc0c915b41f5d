#!/usr/bin/env bash
# Install the rule-based Apertium translator with the language pairs xlt's translation tests and benchmarks use
# (Debian/Ubuntu packages: apertium, apertium-eng-spa, apertium-hbs-eng).  Needs root or sudo; without them it
# says so and exits 0 (the Apertium tests then skip, naming the packages).
set -uo pipefail
PACKAGES="apertium apertium-eng-spa apertium-hbs-eng"
MODES=$(command -v apertium >/dev/null && apertium -l 2>/dev/null || true)
if [[ "$MODES" == *eng-spa* && "$MODES" == *eng-hbs* ]]; then
  echo "apertium: already installed"; exit 0
fi
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo -n"; else
  echo "apertium: not installed and no root/sudo; install: apt-get install $PACKAGES"; exit 0; fi
if ! command -v apt-get >/dev/null; then echo "apertium: no apt-get; install $PACKAGES by hand"; exit 0; fi
$SUDO apt-get update -qq >/dev/null 2>&1 || echo "apertium: apt-get update failed"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $PACKAGES >/dev/null 2>&1 \
  && echo "apertium: installed $PACKAGES" || echo "apertium: install failed; its tests will skip"
exit 0
