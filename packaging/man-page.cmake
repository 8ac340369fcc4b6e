# Writes a man page for a program from its --help (help2man), with one "COMMANDS" section that
# holds the --help of each subcommand the program lists, so the page follows the CLI as it grows.
# Run by QsInstall.cmake at build time:
#   cmake -DPROGRAM=exe -DNAME=quantscope-cli -DSUMMARY=... -DHELP2MAN=... [-DGZIP=...]
#         [-DINCLUDE=extra.h2m] [-DSUBCOMMANDS=ON] [-DVERSION=x.y.z] -DOUTPUT=dir/quantscope-cli.1[.gz]
#         -P man-page.cmake
# VERSION: the version to print instead of what `PROGRAM --version` says (the GUI says "QuantScope x.y.z",
# which help2man would take for the command's name).
# Environment for the program (QT_QPA_PLATFORM=offscreen for the GUI) comes from the caller.
foreach(var PROGRAM NAME SUMMARY HELP2MAN OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "man-page.cmake: -D${var}= is required")
  endif()
endforeach()

get_filename_component(out_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${out_dir}")
set(page "${out_dir}/${NAME}.1")
set(work "${out_dir}/${NAME}.h2m")
file(WRITE "${work}" "")

# roff reads a line that starts with '.' or '\'' as a request and '\' as an escape.
function(roff_text text out_var)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

if(SUBCOMMANDS)
  execute_process(COMMAND "${PROGRAM}" --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "man-page.cmake: ${PROGRAM} --help exited with ${rc}")
  endif()
  # CLI11 lists them under "Subcommands:" (older releases: "SUBCOMMANDS:"), two spaces in.
  string(REGEX MATCH "[Ss][Uu][Bb][Cc][Oo][Mm][Mm][Aa][Nn][Dd][Ss]:\n(  [^\n]*\n?)+" listing "${help}")
  string(REGEX MATCHALL "\n  [A-Za-z0-9][A-Za-z0-9_-]*" names "${listing}")
  if(names STREQUAL "")
    message(FATAL_ERROR "man-page.cmake: found no subcommands in the --help of ${PROGRAM}")
  endif()
  file(APPEND "${work}" "[COMMANDS]\n")
  foreach(name IN LISTS names)
    string(STRIP "${name}" name)
    execute_process(COMMAND "${PROGRAM}" ${name} --help OUTPUT_VARIABLE sub_help RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "man-page.cmake: ${PROGRAM} ${name} --help exited with ${rc}")
    endif()
    string(STRIP "${sub_help}" sub_help)
    roff_text("${sub_help}" sub_help)
    file(APPEND "${work}" ".SS ${name}\n.nf\n${sub_help}\n.fi\n")
  endforeach()
endif()
if(DEFINED INCLUDE)
  file(READ "${INCLUDE}" extra)
  file(APPEND "${work}" "${extra}")
endif()

set(version_arg "")
if(DEFINED VERSION)
  set(version_arg "--version-string=${VERSION}")
endif()
# Only standard output: Qt writes its start-up warnings (XDG_RUNTIME_DIR) to standard error.
execute_process(
  COMMAND "${HELP2MAN}" --no-info --section=1 "--name=${SUMMARY}" ${version_arg}
          "--include=${work}" "--output=${page}" "${PROGRAM}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "man-page.cmake: help2man failed (${rc}) on ${PROGRAM}")
endif()

if(OUTPUT MATCHES "\\.gz$")
  if(NOT DEFINED GZIP)
    message(FATAL_ERROR "man-page.cmake: ${OUTPUT} asks for gzip; pass -DGZIP=")
  endif()
  # -n: no name or time stamp inside, so the same page compresses to the same bytes.
  execute_process(COMMAND "${GZIP}" -9 -n -f "${page}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "man-page.cmake: gzip failed (${rc}) on ${page}")
  endif()
elseif(NOT page STREQUAL OUTPUT)
  file(RENAME "${page}" "${OUTPUT}")
endif()
file(REMOVE "${work}")
