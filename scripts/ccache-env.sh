# Sourced by the build scripts (test.sh, fuzz.sh, demo.sh): the compiler
# cache's settings for this checkout. CMakeLists.txt compiles through
# ccache when it is installed (setup.sh installs it); these make the cache
# shared across clones and build trees:
#   - CCACHE_BASEDIR is the checkout's root, so ccache rewrites the absolute
#     paths under it (sources, -I, the build tree inside it) to relative
#     ones: a clone in another folder, or CI's fresh clone, hits the objects
#     an earlier clone compiled;
#   - CCACHE_NOHASHDIR leaves the working directory out of the hash, which
#     ccache otherwise adds for builds with debug information (the
#     sanitizer builds' -gline-tables-only);
#   - CCACHE_MAXSIZE=10G holds the Release, ASan+UBSan and TSan trees,
#     unless the user's ccache.conf already sets a size.
# Each is left alone when the environment already sets it.
# shellcheck shell=bash
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
if [[ -z ${CCACHE_MAXSIZE:-} ]] && command -v ccache >/dev/null &&
   ccache -p 2>/dev/null | grep -q '^(default) max_size'; then
  export CCACHE_MAXSIZE=10G
fi
