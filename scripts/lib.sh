# Shared by scripts/release and scripts/tidy (sourced, not run).
#
# The modules of this repository. PUBLISHED are released, in this order: a
# module comes after every module of ours it requires (workerpoolprom and
# workerpoolotel may require natsfeed). The others are never tagged; they
# require our modules at the same versions and are joined by go.work.
ROOT_PATH=github.com/e86d9661/workerpool
PUBLISHED=(. natsfeed workerpoolprom workerpoolotel)
UNPUBLISHED=(benchmarks examples/metrics workerpoolprom/dashboardtest)

# The workspaces: the repository's go.work, for the oldest Go below, joins
# every module that builds with it; the modules that need a newer Go
# (their dependencies do) have a go.work of their own, which joins our
# modules they require.
WORKSPACES=(go.work benchmarks/go.work workerpoolprom/dashboardtest/go.work)

# The oldest Go the published modules claim (their go lines say go 1.25.0),
# as a pinned toolchain: CI builds and tests with it.
OLDEST_GO=go1.25.14

# tagof DIR VERSION prints the git tag of the module in DIR at VERSION.
tagof() {
	if [ "$1" = . ]; then echo "$2"; else echo "$1/$2"; fi
}

# pathof DIR prints the module path of the go.mod in DIR.
pathof() {
	go mod edit -json "$1/go.mod" | sed -n 's/^\t\t"Path": "\(.*\)"$/\1/p' | head -1
}

# own_requires DIR prints "PATH VERSION" for each module of ours that the
# go.mod in DIR requires.
own_requires() {
	go mod edit -json "$1/go.mod" |
		awk -v root="$ROOT_PATH" '
			/"Require"/ { inreq = 1 }
			inreq && /"Path"/ { gsub(/[",]/, "", $2); p = $2 }
			inreq && /"Version"/ { gsub(/[",]/, "", $2); if (p == root || index(p, root "/") == 1) print p, $2 }
			/^\t\]/ { inreq = 0 }'
}

# relpath DIR MODDIR prints the path of the module directory MODDIR as a
# go.work in DIR names it; both are relative to the top of the repository
# and go down only (".", "natsfeed", "workerpoolprom/dashboardtest").
relpath() {
	local up= part parts
	if [ "$1" != . ]; then
		IFS=/ read -r -a parts <<<"$1"
		for part in "${parts[@]}"; do up="../$up"; done
	fi
	if [ "$2" = . ]; then
		up=${up%/}
		echo "${up:-.}"
	else
		echo "${up:-./}$2"
	fi
}

# dirof PATH prints the directory of the module with that path.
dirof() {
	local d
	for d in "${PUBLISHED[@]}" "${UNPUBLISHED[@]}"; do
		if [ "$(pathof "$d")" = "$1" ]; then echo "$d"; return; fi
	done
	echo "no module of this repository has the path $1" >&2
	return 1
}

# build_modproxy puts the modproxy binary at $1.
build_modproxy() {
	(cd scripts/modproxy && GOWORK=off go build -o "$1" .)
}

# gomod_env runs a command as someone outside this repository would: no
# go.work, our modules from the file proxy $PROXY first, everything else from
# the module cache (itself a file proxy) or the usual proxy, our modules not
# looked up in the checksum database, and a module cache of its own
# ($MODCACHE), so that no version of ours built from a work tree is ever left
# in the shared one.
gomod_env() {
	GOWORK=off GOFLAGS="-mod=mod -modcacherw" GOMODCACHE="$MODCACHE" \
		GOPROXY="file://$PROXY,file://$(go env GOMODCACHE)/cache/download,$(upstream_proxy)" \
		GONOSUMDB="$ROOT_PATH" "$@"
}

# upstream_proxy prints GOPROXY without direct or off: our modules exist
# only in the file proxy, and a miss there must be an error, not a clone.
upstream_proxy() {
	go env GOPROXY | tr ',|' '\n\n' | grep -v -x -e direct -e off | paste -s -d, -
}
