# What `cmake --install` puts beside the two executables (whose install() rules live in app/*/):
# the resources the programs read at run time, the hicolor icons, the desktop entry, the AppStream
# metainfo and man pages generated from --help. The packaging files are in packaging/.
include(GNUInstallDirs)

set(QS_APP_ID io.github.quantscope.QuantScope)
set(QS_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)

# core/pipeline/bundled_resources.cpp looks for <executable>/../share/quantscope: the data folder
# must sit beside the bin folder, whatever prefix is chosen.
cmake_path(GET CMAKE_INSTALL_BINDIR PARENT_PATH qs_bin_parent)
cmake_path(RELATIVE_PATH CMAKE_INSTALL_DATADIR BASE_DIRECTORY "${qs_bin_parent}" OUTPUT_VARIABLE qs_data_from_bin)
if(NOT qs_data_from_bin STREQUAL "share")
  message(WARNING "QuantScope: CMAKE_INSTALL_DATADIR (${CMAKE_INSTALL_DATADIR}) is not <bin>/../share; "
                  "the installed programs will only find their resources through QS_RESOURCES_DIR")
endif()

# The demo checkpoint (with its calibration and evaluation text), stories260K and the text corpus.
install(DIRECTORY
    ${PROJECT_SOURCE_DIR}/resources/demo
    ${PROJECT_SOURCE_DIR}/resources/models
    ${PROJECT_SOURCE_DIR}/resources/text
  DESTINATION ${CMAKE_INSTALL_DATADIR}/quantscope)

# The licence: Debian's machine-readable copyright file (GPL-3.0-or-later, the bundled data's own
# terms) where dpkg and lintian look for it, the full GPL text beside it for other installs.
install(FILES ${QS_PACKAGING_DIR}/copyright ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/quantscope)   # the package name, not PROJECT_NAME

# Icons: the SVG for every size, and PNGs at the sizes desktops ask for, rendered from it at build
# time. Without a renderer the one PNG in resources/ goes in at the size it has.
set(qs_icon_svg ${PROJECT_SOURCE_DIR}/resources/icons/quantscope.svg)
set(qs_icon_dir ${CMAKE_INSTALL_DATADIR}/icons/hicolor)
install(FILES ${qs_icon_svg} DESTINATION ${qs_icon_dir}/scalable/apps)
find_program(QS_RSVG_CONVERT rsvg-convert)
find_program(QS_IMAGEMAGICK NAMES magick convert)
set(qs_icon_outputs "")
foreach(size 16 22 24 32 48 64 128 256)
  set(png ${CMAKE_CURRENT_BINARY_DIR}/icons/${size}x${size}/quantscope.png)
  if(QS_RSVG_CONVERT)
    set(render ${QS_RSVG_CONVERT} --width=${size} --height=${size} --keep-aspect-ratio --output=${png} ${qs_icon_svg})
  elseif(QS_IMAGEMAGICK)
    set(render ${QS_IMAGEMAGICK} -background none -density 384 ${qs_icon_svg} -resize ${size}x${size} PNG32:${png})
  else()
    break()
  endif()
  add_custom_command(OUTPUT ${png}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/icons/${size}x${size}
    COMMAND ${render}
    DEPENDS ${qs_icon_svg}
    COMMENT "Rendering the ${size}x${size} icon"
    VERBATIM)
  list(APPEND qs_icon_outputs ${png})
  install(FILES ${png} DESTINATION ${qs_icon_dir}/${size}x${size}/apps)
endforeach()
if(qs_icon_outputs)
  add_custom_target(qs_icons ALL DEPENDS ${qs_icon_outputs})
else()
  # The PNG's width is the big-endian word at byte 16 (IHDR).
  set(qs_icon_png ${PROJECT_SOURCE_DIR}/resources/icons/quantscope.png)
  file(READ ${qs_icon_png} qs_png_width OFFSET 16 LIMIT 4 HEX)
  math(EXPR qs_png_width "0x${qs_png_width}")
  message(STATUS "QuantScope: neither rsvg-convert nor ImageMagick found; installing the ${qs_png_width}px icon only")
  install(FILES ${qs_icon_png} DESTINATION ${qs_icon_dir}/${qs_png_width}x${qs_png_width}/apps)
endif()

if(TARGET quantscope)
  install(FILES ${QS_PACKAGING_DIR}/${QS_APP_ID}.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${QS_PACKAGING_DIR}/${QS_APP_ID}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
endif()

# Man pages from each program's --help (help2man), with the sections in packaging/<program>.h2m.
find_program(QS_HELP2MAN help2man)
find_program(QS_GZIP gzip)
if(QS_HELP2MAN AND QS_GZIP)
  set(qs_man_pages "")
  foreach(program quantscope-cli quantscope)
    if(NOT TARGET ${program})
      continue()
    endif()
    set(page ${CMAKE_CURRENT_BINARY_DIR}/man/${program}.1.gz)
    set(args -DPROGRAM=$<TARGET_FILE:${program}> -DNAME=${program} -DHELP2MAN=${QS_HELP2MAN} -DGZIP=${QS_GZIP}
             -DINCLUDE=${QS_PACKAGING_DIR}/${program}.h2m -DOUTPUT=${page})
    if(program STREQUAL "quantscope-cli")
      list(APPEND args "-DSUMMARY=inspect, quantize and compare LLM checkpoints from the command line" -DSUBCOMMANDS=ON)
    else()
      list(APPEND args "-DSUMMARY=inspect LLM checkpoints in a desktop application" -DVERSION=${PROJECT_VERSION})
    endif()
    add_custom_command(OUTPUT ${page}
      # The GUI parses its options after making a QApplication, which needs a platform even for --help.
      COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen
              ${CMAKE_COMMAND} ${args} -P ${QS_PACKAGING_DIR}/man-page.cmake
      DEPENDS ${program} ${QS_PACKAGING_DIR}/man-page.cmake ${QS_PACKAGING_DIR}/${program}.h2m
      COMMENT "Writing the ${program}(1) man page from its --help"
      VERBATIM)
    list(APPEND qs_man_pages ${page})
    install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  endforeach()
  add_custom_target(qs_man_pages ALL DEPENDS ${qs_man_pages})
else()
  message(STATUS "QuantScope: help2man or gzip not found; no man pages (scripts/setup-deps.sh installs help2man)")
endif()
