# cmake -DSOURCE=DIR -DGIT=PATH -DOUT=FILE -P git_describe.cmake: writes FILE with
#   #define UROCE_GIT_DESCRIBE "<git describe --always --dirty --tags of DIR>"
# ("" when DIR is no git checkout or git is missing). FILE is rewritten only when that line changes, so
# running this on every build recompiles nothing unless the checkout moved.
set(describe "")
if(GIT AND EXISTS ${SOURCE}/.git)
  execute_process(COMMAND ${GIT} describe --always --dirty --tags WORKING_DIRECTORY ${SOURCE}
                  OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
set(text "// Generated on every build by cmake/git_describe.cmake.\n#pragma once\n#define UROCE_GIT_DESCRIBE \"${describe}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
