#!/bin/sh
# Prints the Debian archive this machine's apt already uses, so that the set-up scripts download
# through whatever mirror or proxy the site configured rather than through a fixed host that it may
# not reach. Line 1: the archive's URI exactly as apt's sources give it (any scheme: http, https,
# mirror+file:, file:, a proxy's URI). Line 2: the keyring that verifies it (the entry's Signed-By when
# that is a file, else Debian's archive keyring).
# It reads, in apt's order, the one-line sources.list and sources.list.d/*.list files and the deb822
# sources.list.d/*.sources files under $OMPRPC_APT_ETC (default /etc/apt; the tests point it at
# fixtures), and takes the first enabled deb entry (a deb-src one when there is no deb entry) whose
# suites include bookworm itself (not bookworm-security or bookworm-updates, which lack most packages)
# and whose components include main. CD-ROM entries are passed over: a private apt configuration
# cannot fetch from them. Fails (exit 1) with one line saying what to add when there is no such entry.
# Usage: sh scripts/apt-mirror.sh
set -eu
etc=${OMPRPC_APT_ETC:-/etc/apt}
# apt reads the parts in byte order of their names; so must we, whatever the locale.
LC_ALL=C
export LC_ALL

set --
[ -f "$etc/sources.list" ] && set -- "$etc/sources.list"
for part in "$etc"/sources.list.d/*; do
  case $part in
    *.list | *.sources) [ -f "$part" ] && set -- "$@" "$part" ;;
  esac
done

fail() {
  echo "omprpc setup: found no Debian 12 archive in apt's sources (a deb or deb-src entry for suite bookworm with component main, in $etc/sources.list or $etc/sources.list.d/*.list or *.sources); add the Debian 12 archive your machine uses to apt's sources and retry" >&2
  exit 1
}

[ $# -gt 0 ] || fail

awk -v default_keyring=/usr/share/keyrings/debian-archive-keyring.gpg '
function trim(s) {
  sub(/^[ \t]+/, "", s)
  sub(/[ \t\r]+$/, "", s)
  return s
}
# Whether the blank- or comma-separated list holds word exactly.
function has_word(list, word,   n, a, i) {
  n = split(trim(list), a, /[ \t,]+/)
  for (i = 1; i <= n; i++)
    if (a[i] == word) return 1
  return 0
}
# A Signed-By value may be key files, fingerprints or an inline key; only a file can be handed on.
function keyring_of(value,   a) {
  split(trim(value), a, /[ \t,]+/)
  return substr(a[1], 1, 1) == "/" ? a[1] : default_keyring
}
function consider(type, uri, suites, components, signed) {
  gsub(/"/, "", uri)
  if (uri == "" || uri ~ /^cdrom:/) return
  if (!has_word(suites, "bookworm") || !has_word(components, "main")) return
  if (type == "deb" && deb_uri == "") {
    deb_uri = uri
    deb_keyring = keyring_of(signed)
  }
  if (type == "deb-src" && src_uri == "") {
    src_uri = uri
    src_keyring = keyring_of(signed)
  }
}
function end_stanza(   enabled, n, uris, i) {
  enabled = tolower(trim(field["enabled"]))
  if (in_stanza && enabled !~ /^(no|false|off|without|disable)$/) {
    n = split(trim(field["uris"]), uris, /[ \t]+/)
    for (i = 1; i <= n; i++) {
      if (has_word(field["types"], "deb"))
        consider("deb", uris[i], field["suites"], field["components"], field["signed-by"])
      if (has_word(field["types"], "deb-src"))
        consider("deb-src", uris[i], field["suites"], field["components"], field["signed-by"])
    }
  }
  split("", field)
  in_stanza = 0
  last = ""
}
# Words of a one-line entry; blanks inside [...] (the options, a CD-ROM URI) or "..." do not split.
function words(s, w,   n, i, c, cur, have, bracket, quote) {
  n = 0
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (!bracket && !quote && (c == " " || c == "\t" || c == "\r")) {
      if (have) w[++n] = cur
      cur = ""
      have = 0
      continue
    }
    if (c == "\"") quote = !quote
    else if (!quote && c == "[") bracket = 1
    else if (!quote && c == "]") bracket = 0
    cur = cur c
    have = 1
  }
  if (have) w[++n] = cur
  return n
}
FNR == 1 {
  end_stanza()
  deb822 = FILENAME ~ /\.sources$/
}
deb822 && /^[ \t]*#/ { next }
deb822 && /^[ \t\r]*$/ { end_stanza(); next }
deb822 && /^[ \t]/ {
  if (last != "") field[last] = field[last] " " trim($0)
  next
}
deb822 {
  colon = index($0, ":")
  if (colon == 0) next
  last = tolower(trim(substr($0, 1, colon - 1)))
  field[last] = trim(substr($0, colon + 1))
  in_stanza = 1
  next
}
{
  line = $0
  hash = index(line, "#")
  if (hash > 0) line = substr(line, 1, hash - 1)
  split("", w)
  n = words(line, w)
  if (n < 3 || (w[1] != "deb" && w[1] != "deb-src")) next
  at = 2
  signed = ""
  if (substr(w[2], 1, 1) == "[") {
    options = w[2]
    gsub(/[][]/, " ", options)
    m = split(trim(options), o, /[ \t]+/)
    for (j = 1; j <= m; j++)
      if (tolower(o[j]) ~ /^signed-by=/) signed = substr(o[j], 11)
    at = 3
  }
  components = ""
  for (j = at + 2; j <= n; j++) components = components " " w[j]
  consider(w[1], w[at], w[at + 1], components, signed)
}
END {
  end_stanza()
  if (deb_uri != "") {
    print deb_uri
    print deb_keyring
  } else if (src_uri != "") {
    print src_uri
    print src_keyring
  } else {
    exit 1
  }
}
' "$@" || fail
