#!/usr/bin/env bash
# Makes a THROWAWAY test PKI for RAUC bundles in DIR. For tests and trying things out only:
# the private keys are unencrypted files. A vendor's real keys are made and kept as
# docs/updates.md#signing-keys says (offline CA, signing key on an HSM, never in a repository).
#
#   scripts/bundle-keys.sh DIR [--days N]
#
# DIR/ca.key.pem, ca.cert.pem           test CA (self-signed)
# DIR/signing.key.pem, signing.cert.pem a bundle signing certificate issued by that CA
#                                       (keyUsage digitalSignature, extendedKeyUsage codeSigning +
#                                       emailProtection: rauc 1.8 checks the smimesign purpose by default;
#                                       codeSigning lets a box use check-purpose=codesign)
# DIR/keyring.pem                       what goes onto the box (build-image.sh --keyring): the CA cert
# DIR/other/…                           the same again from a second, unrelated CA: bundles signed
#                                       with it must be refused by DIR/keyring.pem
# Existing files are kept (rerunning does not change a keyring already put into an image);
# delete DIR to start over. Needs openssl (installed through apt when missing).
set -euo pipefail

DIR="" DAYS=3650
while (($#)); do
  case "$1" in
    --days) DAYS="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bundle-keys: unknown argument $1" >&2; exit 2 ;;
    *) [ -z "$DIR" ] || { echo "bundle-keys: one DIR only" >&2; exit 2; }; DIR="$1"; shift ;;
  esac
done
[ -n "$DIR" ] || { echo "usage: scripts/bundle-keys.sh DIR [--days N]" >&2; exit 2; }

if ! command -v openssl >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || { echo "bundle-keys: needs openssl: apt-get install openssl" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends openssl >/dev/null
fi

# make_pki DIR NAME: a CA and one signing certificate issued by it.
make_pki() {
  local d="$1" name="$2"
  mkdir -p "$d"
  if [ -s "$d/keyring.pem" ] && [ -s "$d/signing.cert.pem" ] && [ -s "$d/signing.key.pem" ]; then
    echo "bundle-keys: $d: kept (exists)"
    return 0
  fi
  local ext="$d/.ext.cnf"
  cat > "$ext" <<'EOF'
[signer]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = codeSigning, emailProtection
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
EOF
  # EC P-256: small signatures, fast on a Pi; RAUC verifies through OpenSSL's CMS, any key type works.
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$DAYS" \
    -subj "/O=Crier TEST ONLY/CN=$name bundle CA (test, do not ship)" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$d/ca.key.pem" -out "$d/ca.cert.pem" 2>"$d/.log" || { cat "$d/.log" >&2; exit 1; }
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/O=Crier TEST ONLY/CN=$name bundle signing (test, do not ship)" \
    -keyout "$d/signing.key.pem" -out "$d/signing.csr.pem" 2>"$d/.log" || { cat "$d/.log" >&2; exit 1; }
  openssl x509 -req -in "$d/signing.csr.pem" -CA "$d/ca.cert.pem" -CAkey "$d/ca.key.pem" \
    -CAcreateserial -days "$DAYS" -extfile "$ext" -extensions signer -out "$d/signing.cert.pem" \
    2>"$d/.log" || { cat "$d/.log" >&2; exit 1; }
  rm -f "$d/signing.csr.pem" "$d/ca.cert.srl" "$ext" "$d/.log"
  cp "$d/ca.cert.pem" "$d/keyring.pem"
  chmod 600 "$d/ca.key.pem" "$d/signing.key.pem"
  openssl verify -CAfile "$d/keyring.pem" "$d/signing.cert.pem" >/dev/null
  echo "bundle-keys: $d: $name test CA + signing certificate ($(openssl x509 -in "$d/signing.cert.pem" -noout -enddate))"
}

make_pki "$DIR" "Crier"
make_pki "$DIR/other" "Other"
echo "bundle-keys: TEST KEYS ONLY: keyring $DIR/keyring.pem, sign with --cert $DIR/signing.cert.pem --key $DIR/signing.key.pem"
