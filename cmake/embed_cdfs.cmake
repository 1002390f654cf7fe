# Writes OUT, a header with the flow-size CDFs of data/cdf as string literals (builtin_cdf(name)).
# Run at build time: cmake -DSRC=<data/cdf> -DOUT=<header> -P embed_cdfs.cmake
set(body "// Generated from data/cdf/*.txt by cmake/embed_cdfs.cmake; do not edit.\n#pragma once\n#include <cstring>\n#include <string>\n\n")
string(APPEND body "namespace uroce::exp::ns3 {\n\ninline const char* builtin_cdf(const char* name) {\n")
foreach(n websearch fb_hadoop)
  file(READ ${SRC}/${n}.txt text)
  string(APPEND body "  if (std::strcmp(name, \"${n}\") == 0) return R\"cdf(${text})cdf\";\n")
endforeach()
string(APPEND body "  return nullptr;\n}\n\ninline const char* builtin_cdf(const std::string& name) { return builtin_cdf(name.c_str()); }\n\n}  // namespace uroce::exp::ns3\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
