#!/bin/sh
# Every configuration variable the code declares is documented in
# docs/configuration.md with its default (regenerate with weft_info -m).
set -e
doc="${srcdir:-.}/docs/configuration.md"
missing=0
./weft_info -m | grep '^| `WEFT_' | while IFS= read -r row; do
    if ! grep -qF -- "$row" "$doc"; then
        echo "not in docs/configuration.md (or out of date): $row"
        exit 1
    fi
done || missing=1
[ "$missing" -eq 0 ] && echo "config_doc_check: every variable documented"
exit "$missing"
